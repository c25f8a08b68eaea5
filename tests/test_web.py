"""`mem4d web`'s page in a real browser: headless Chromium (Debian's chromium, driven by Playwright) loads the built
site from file://, sets configurations through its controls (choosing among the values each control offers), and
reads the numbers shown; each must equal `mem4d estimate --json`'s (estimate(...).as_json, the dict the command
prints) exactly, to the byte. A configuration the page refuses shows the CLI's one-line error.

Source of truth: symbolic.estimator.estimate (the numpy estimator from the same sympy expressions). Tolerance: none.
Skips only where no chromium or no playwright is installed (.ci/run installs both)."""

import re
import shutil
import time

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import resolve_model
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.recipes import widths
from symbolic.web.build import build
from symbolic.web.data import Options
from web_page import (
    CONTROLS,
    MODELS,
    PASTE_SET,
    PLAN_READ,
    PLAN_SET,
    PLANS,
    PUBLISHED,
    READ,
    SET,
    checked,
    cli,
    cli_line,
    compare,
    plan_cli,
    read_in_page,
    set_plan,
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# 4 switch combinations per recipe (each recipe's default among them): the cold build stays short
OPTIONS = Options(recompute=("none", "selective"), zero=(1, 3), fp8=("none", "tensorwise"))
CONFIGS = 50


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (apt-get install chromium; .ci/run installs it)")
    pytest.importorskip("playwright.sync_api", reason="no playwright (pip install -e .[test])")
    out = tmp_path_factory.mktemp("site")
    start = time.perf_counter()
    build(
        out,
        [resolve_model(spec) for spec in MODELS],
        options=OPTIONS,
        formulas="defaults",
        install=False,
        specs={resolve_model(spec).name: spec for spec in MODELS},
    )  # KaTeX where npm's copy is cached: the test
    # reads numbers, never the network
    return out, time.perf_counter() - start


@pytest.fixture(scope="session")
def page(site):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        tab = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = []
        tab.on("pageerror", lambda err: errors.append(str(err)))
        tab.goto((site[0] / "index.html").as_uri())
        tab.wait_for_function("document.body.dataset.state === 'ready'")
        yield tab, errors
        browser.close()


def test_opens_on_the_cli_default(page):
    """Before any control is touched the page shows what `mem4d estimate` with no flags answers: its numbers, and its
    verdict line word for word (the command's table output, its wrapped lines joined)."""
    import contextlib
    import io

    from symbolic.cli.entry import main

    tab, errors = page
    shown = tab.evaluate(READ)
    assert shown["state"]["model"] == "llama3-8b" and not errors
    compare(shown, cli(shown["state"]))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["estimate"]) == 0
    text = " ".join(out.getvalue().split())
    verdict = tab.inner_text("#verdict")
    assert verdict in text and verdict.startswith("DOES NOT FIT: peak 167.96 GiB")


def test_dump_dom_shows_the_verdict(page, site):
    """`chromium --headless --dump-dom site/index.html` (no script of ours driving it) holds the verdict the page
    draws on opening: what `mem4d estimate` prints."""
    import subprocess

    tab, _ = page
    verdict = tab.inner_text("#verdict")
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", (site[0] / "index.html").as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    text = " ".join(re.sub(r"<[^>]*>", "", dom).replace("&lt;", "<").split())
    assert verdict.startswith("DOES NOT FIT: peak 167.96 GiB") and verdict in text


def test_configurations_equal_the_cli(page, site):
    """CONFIGS configurations set through the controls, each value among those the page offers: every number equals
    the CLI's, and the page never offers a configuration the CLI refuses."""
    tab, errors = page
    kinds = set()
    for seed in range(1, CONFIGS + 1):
        shown = tab.evaluate(SET.replace("READ()", f"({READ})()"), [seed * 7919, list(CONTROLS)])
        assert "refusal" not in shown, (shown["state"], shown.get("refusal"))
        report = cli(shown["state"])
        compare(shown, report)
        kinds.add(
            (
                shown["state"]["model"],
                shown["state"]["recipe"],
                int(shown["state"]["e"]) > 1,
                int(shown["state"]["p"]) > 1,
                shown["state"]["fp8"],
            )
        )
    assert not errors
    assert {kind[0] for kind in kinds} >= {"llama3-8b", "mixtral-8x7b", "mla-lite-768"}
    assert {kind[1] for kind in kinds} == {"megatron", "torchtitan", "deepspeed"}
    assert any(kind[2] for kind in kinds) and any(kind[3] for kind in kinds)
    assert {kind[4] for kind in kinds} == {"none", "tensorwise"}


def test_rules_refuse_as_the_cli(page):
    """The rule table traced into the page (rulesjs) refuses exactly what the command refuses, with its line: 300
    seeded configurations over every value the controls hold, most of them broken, checked in the page at once."""
    import random

    tab, _ = page
    rng = random.Random(48)
    names = [m["name"] for m in tab.evaluate("() => MEM4D.site.models")]
    options = tab.evaluate("() => MEM4D.site.options")
    states = [
        {
            "model": rng.choice(names),
            "gpu_mem": "80GiB",
            **{
                key: rng.choice(options[key])
                for key in ("recipe", "d", "t", "p", "c", "e", "vpp", "s", "b", "m", "recompute", "zero", "fp8")
            },
        }
        for _ in range(300)
    ]
    shown = tab.evaluate(
        """(states) => states.map((st) => {
        const model = MEM4D.site.models.find((m) => m.name === st.model);
        const problem = MEM4D.broken(MEM4D.letters(st, model), st.recipe);
        return problem && problem.message; })""",
        states,
    )
    refused = 0
    for state, message in zip(states, shown):
        try:
            checked(state)
            expected = None
        except ConfigError as err:
            expected = str(err)
        refused += expected is not None
        assert message == expected, state
    assert 100 < refused < 300


def test_plan_ranks_as_the_cli(page):
    """The plan view (computed in a Web Worker) lists the rows `mem4d plan --json` ranks first among those with the
    recompute choice (no other modules, no --ac-every), ZeRO stage and FP8 the controls hold and even stages, in its
    order, with its score (predicted tokens/s/GPU, or its proxy's where plan ranks by that) to 1e-12 relative and peak bytes to the
    byte; the command line it shows is the one run. plan's --top 100 holds at least 10 such rows, so its first 10 of
    them are the best 10 of its whole search."""
    tab, errors = page
    ranked = set()
    for controls, gpus in PLANS:
        set_plan(tab, controls, gpus)
        line = tab.inner_text("#plan-cli")
        assert line.startswith("mem4d plan ") and f" --gpus {gpus} " in line
        report, _ = plan_cli(line, ["--top", "100", "--json"])
        ranked.add(report["rank_by"])
        rows = [
            row
            for row in report["configs"]
            if row["config"]["recompute"] == controls["recompute"]
            and not {"recompute_modules", "ac_every"} & set(row["config"])
            and not row["config"]["stage_layers"]
        ]
        assert len(rows) >= 10, controls
        expected = [
            [
                ",".join(
                    str(row["config"].get(key, default))
                    for key, default in (
                        ("dp", 0),
                        ("tp", 0),
                        ("pp", 0),
                        ("cp", 0),
                        ("ep", 1),
                        ("etp", row["config"]["tp"]),
                        ("vpp", 0),
                        ("mbs", 0),
                    )
                ),
                repr(row["score"]),
                str(row["peak_bytes"]),
            ]
            for row in rows[:10]
        ]
        shown = tab.evaluate(PLAN_READ)
        assert [[c, b] for c, _, b in shown] == [[c, b] for c, _, b in expected], controls
        # the score: one expression in JavaScript's Math and in numpy (they differ in the 16th digit): to 1e-12
        assert [float(s) for _, s, _ in shown] == pytest.approx([float(s) for _, s, _ in expected], rel=1e-12)
    assert not errors and ranked == {"time", "proxy"}


def test_plan_refuses_as_the_cli(page):
    """A system whose card has no FP8 tensor cores under --fp8: the view shows plan's one line and lists nothing."""
    tab, _ = page
    set_plan(
        tab,
        {
            "model": "gpt2",
            "d": "1",
            "s": "1024",
            "b": "1",
            "m": "8",
            "zero": "1",
            "recompute": "none",
            "fp8": "tensorwise",
            "gpu_mem": "80GiB",
            "system": "dgx-a100",
        },
        8,
    )
    report, line = plan_cli(tab.inner_text("#plan-cli"), ["--json"])
    assert report is None and tab.inner_text("#plan-count") == line and "no FP8 tensor cores" in line
    assert tab.evaluate(PLAN_READ) == []
    set_plan(tab, {"model": "gpt2", "system": "dgx-h100"}, 8)


def test_refusal_is_the_cli_line(page):
    """A configuration the rule table breaks (a model switched under the degrees set for another) shows the CLI's
    one line, word for word."""
    tab, _ = page
    tab.evaluate("""() => { for (const [id, v] of [["model", "llama3-8b"], ["t", "8"], ["s", "4096"],
        ["model", "gpt2"]]) { const n = document.getElementById(id); n.value = v;
        n.dispatchEvent(new Event("change", {bubbles: true})); } }""")
    shown = tab.evaluate(READ)
    with pytest.raises(ConfigError) as err:
        cli(shown["state"])
    assert shown["refusal"] == f"mem4d estimate: error: {err.value}"


def test_a_pasted_config_json_equals_the_cli(page, tmp_path):
    """A published dense config.json pasted, a published MoE one chosen as a file: read in the page (reader.js), run
    on the built code of their architecture, every number equals `mem4d estimate --model FILE --json`'s; a bad
    config.json dropped on the box shows the command's one line word for word, a model type the page does not read and an architecture
    it has no code for each one line naming `mem4d web --model FILE -o site`."""
    from symbolic.config.hfconfig import from_hf_config

    tab, errors = page
    for path, how, extra in (
        (PUBLISHED / "llama3.1-8b.json", "paste", {"e": "1"}),
        (PUBLISHED / "mixtral-8x7b.json", "file", {"e": "2"}),
    ):
        line = read_in_page(tab, path, how)
        shape = from_hf_config(path)
        assert line.startswith("read ") and f"{shape.param_count:,} parameters" in line, line
        tab.evaluate(PLAN_SET, {**PASTE_SET, **extra})
        tab.wait_for_function("document.body.dataset.state === 'ready'")
        shown = tab.evaluate(READ)
        assert "refusal" not in shown, shown
        spec = "config.json" if how == "paste" else path.name
        assert f"--model {spec} " in tab.inner_text("#cli")
        state = shown["state"]
        training = Training(**widths("paper"), d=2, t=2, p=2, ep=int(state["e"]), s=4096, b=1, recompute="selective")
        compare(shown, estimate(shape, training.check(shape, "paper"), "paper").as_json(80 * 2**30))
    bad = '{"model_type": "llama", "hidden_size": NaN}'
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text(bad)
    assert read_in_page(tab, tmp_path / "bad" / "config.json", "drop") == cli_line(tmp_path, bad)
    for name in ("deepseek-v2-lite.json", "qwen2-7b.json"):
        assert f"mem4d web --model {name} -o site" in read_in_page(tab, PUBLISHED / name, "file")
    assert not errors
