"""Driving `mem4d web`'s built page from tests/test_web.py: the page's scripts (set controls, read the numbers shown),
the plan view's cases, and the CLI's answers each page figure is compared to (the command's own objects, in
process)."""

import os
from pathlib import Path

from symbolic.config.hfconfig import resolve_model
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.recipes import RECIPES, widths

ROOT = Path(__file__).resolve().parents[1]


# dense (the default), MoE with ep, MLA, a hybrid (Gated DeltaNet, MoE, MTP), GPT (tied, learned positions)
MODELS = (
    "llama3-8b",
    "mixtral-8x7b",
    "gpt2",
    str(ROOT / "grids/models/mla-lite-768.json"),
    str(ROOT / "grids/models/qwen3-next-1280.json"),
)
CONTROLS = ("model", "recipe", "gpu_mem", "d", "t", "p", "c", "e", "vpp", "s", "b", "m", "recompute", "zero", "fp8")

# one page call per configuration: pick each control's value among those it offers (seeded), then report the numbers
# the page shows (the DOM's data-bytes cells) once the estimate is drawn
SET = """async ([seed, controls]) => {
  let x = seed;
  const next = () => { x = (x * 1103515245 + 12345) % 2147483648; return x; };
  for (const id of controls) {
    const node = document.getElementById(id);
    const offered = [...node.options].filter((o) => !o.disabled);
    const pick = offered[next() % offered.length];
    if (node.value !== pick.value) {
      node.value = pick.value;
      node.dispatchEvent(new Event("change", {bubbles: true}));  // the page re-offers the other controls' values
    }
  }
  while (document.body.dataset.state !== "ready") await new Promise((r) => setTimeout(r, 5));
  return READ();
}"""
READ = """() => {
  const state = Object.fromEntries(new URLSearchParams(location.hash.slice(1)));
  const refusal = document.getElementById("refusal");
  if (!refusal.hidden) return {state, refusal: refusal.textContent};
  const cells = {};
  for (const td of document.querySelectorAll("#components td[data-stage]")) {
    const name = td.parentElement.dataset.name;
    (cells[td.dataset.stage] ??= {})[name] = td.dataset.bytes;
  }
  return {state, cells, peak: document.getElementById("peak").dataset.bytes,
          fits: document.getElementById("fits").dataset.fits, loaded: document.getElementById("most-loaded").textContent};
}"""


def checked(state: dict) -> tuple:
    """The page's state as the command reads it: the model, its Training after the command's checks (Training and its
    rule table, ConfigError where they refuse) and the recipe."""
    shape = resolve_model(next(spec for spec in MODELS if resolve_model(spec).name == state["model"]))
    profile = RECIPES[state["recipe"]]
    d, b, m = int(state["d"]), int(state["b"]), int(state["m"])
    training = Training(
        **widths(profile),
        d=d,
        t=int(state["t"]),
        p=int(state["p"]),
        c=int(state["c"]),
        ep=int(state["e"]),
        vpp=int(state["vpp"]),
        s=int(state["s"]),
        b=b,
        gbs=m * b * d if m else None,
        recompute=state["recompute"],
        zero=int(state["zero"]),
        fp8=state["fp8"],
    )
    return shape, training.check(shape, profile), profile


def cli(state: dict) -> dict:
    """What `mem4d estimate --json` prints for the page's state (the command's own objects, in process)."""
    from symbolic.flags.values import parse_bytes

    shape, training, profile = checked(state)
    return estimate(shape, training, profile).as_json(parse_bytes(state["gpu_mem"]))


def compare(shown: dict, report: dict) -> None:
    profile = {name: x for name, x in shown["cells"]["total"].items() if x != ""}  # "": a row of exact stages only
    assert profile == {name: str(x) for name, x in report["bytes"].items()}
    for stage in report["stages"]:
        cells = shown["cells"][str(stage["rank"])]  # the rows: the profile's components, the stages' nonzero ones
        assert {name: x for name, x in cells.items() if name in stage["bytes"]} == {
            name: str(x) for name, x in stage["bytes"].items() if name in cells
        }
        assert all(x == 0 for name, x in stage["bytes"].items() if name not in cells)
        assert all(cells[name] == "0" for name in cells if name not in stage["bytes"])
    assert set(shown["cells"]) == {"total", *(str(stage["rank"]) for stage in report["stages"])}
    assert (shown["peak"], shown["fits"], shown["loaded"]) == (
        str(report["peak_bytes"]),
        str(report["fits"]).lower(),
        report["most_loaded_stage"],
    )


# the plan view's cases: (controls, GPUs); ranked by the step-time model: dense with selective recompute, MoE with ep
# and etp in FP8, MLA under ZeRO-3; by plan's proxy: torchtitan, a hybrid (Gated DeltaNet) under Megatron
PLANS = (
    (
        {
            "model": "llama3-8b",
            "d": "2",
            "s": "4096",
            "b": "1",
            "m": "8",
            "zero": "1",
            "recompute": "selective",
            "fp8": "none",
            "gpu_mem": "80GiB",
        },
        8,
    ),
    (
        {
            "model": "mixtral-8x7b",
            "d": "2",
            "s": "2048",
            "b": "1",
            "m": "8",
            "zero": "1",
            "recompute": "none",
            "fp8": "tensorwise",
            "gpu_mem": "141GB",
        },
        16,
    ),
    (
        {
            "model": "mla-lite-768",
            "d": "1",
            "s": "4096",
            "b": "2",
            "m": "16",
            "zero": "3",
            "recompute": "selective",
            "fp8": "none",
            "gpu_mem": "24GiB",
        },
        8,
    ),
    (
        {
            "model": "llama3-8b",
            "recipe": "torchtitan",
            "d": "2",
            "s": "4096",
            "b": "1",
            "m": "8",
            "zero": "3",
            "recompute": "selective",
            "fp8": "none",
            "gpu_mem": "80GiB",
        },
        8,
    ),
    (
        {
            "model": resolve_model(MODELS[-1]).name,
            "d": "1",
            "s": "4096",
            "b": "1",
            "m": "8",
            "zero": "1",
            "recompute": "none",
            "fp8": "none",
            "gpu_mem": "80GiB",
        },
        8,
    ),
)
PLAN_SET = """(c) => { for (const [id, v] of Object.entries(c)) { const n = document.getElementById(id); n.value = v;
    n.dispatchEvent(new Event("change", {bubbles: true})); } }"""
PLAN_READ = """() => [...document.querySelectorAll("#plan tbody tr")].map((tr) =>
    [tr.dataset.config, tr.dataset.score, tr.dataset.peak])"""


def plan_cli(line: str, more: list[str]) -> tuple[dict | None, str]:
    """`mem4d plan`'s JSON for the command line the page shows (a config.json by its path, as the site was built
    with it), or None and the line it exits 2 with."""
    import contextlib
    import io
    import json
    import shlex

    from symbolic.cli.entry import main

    argv = shlex.split(line)[1:] + more
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return (json.loads(out.getvalue()) if code == 0 else None), err.getvalue().strip()


def set_plan(tab, controls: dict, gpus: int) -> None:
    ones = {name: "1" for name in ("t", "p", "c", "e", "vpp")}  # the degrees plan searches: any the rules allow
    tab.evaluate(PLAN_SET, {"model": controls["model"], "recipe": "megatron", **ones, **controls, "gpus": str(gpus)})
    tab.wait_for_function("document.body.dataset.state === 'ready' && document.body.dataset.plan === 'ready'")


PUBLISHED = ROOT / "grids" / "models" / "published"
PASTE_SET = {
    "recipe": "megatron",
    "d": "2",
    "t": "2",
    "p": "2",
    "c": "1",
    "vpp": "1",
    "s": "4096",
    "b": "1",
    "m": "0",
    "recompute": "selective",
    "zero": "1",
    "fp8": "none",
    "gpu_mem": "80GiB",
}


def read_in_page(tab, path: Path, how: str) -> str:
    """Give the page a config.json (pasted into the box, dropped on it or chosen as a file) and return the line it
    answers with."""
    tab.evaluate("() => { document.getElementById('config-drop').open = true; }")
    if how == "paste":
        tab.fill("#paste", path.read_text())
        tab.click("#paste-read")
    elif how == "drop":  # a file dropped on the box, as a file manager drops it
        drop = tab.evaluate_handle(
            """([text, name]) => { const dt = new DataTransfer();
            dt.items.add(new File([text], name, {type: "application/json"})); return dt; }""",
            [path.read_text(), path.name],
        )
        tab.dispatch_event("#config-drop", "drop", {"dataTransfer": drop})
    else:
        tab.set_input_files("#paste-file", str(path))
    tab.wait_for_function("!document.getElementById('paste-status').hidden && document.body.dataset.state === 'ready'")
    line = tab.inner_text("#paste-status")
    tab.evaluate("() => { document.getElementById('paste-status').hidden = true; }")
    return line


def cli_line(tmp_path: Path, text: str) -> str:
    """The line `mem4d estimate --model config.json` exits 2 with (run where the file is)."""
    import contextlib
    import io

    from symbolic.cli.entry import main

    (tmp_path / "config.json").write_text(text)
    err = io.StringIO()
    cwd = Path.cwd()
    try:
        os.chdir(tmp_path)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert main(["estimate", "--model", "config.json"]) == 2
    finally:
        os.chdir(cwd)
    return err.getvalue().strip()
