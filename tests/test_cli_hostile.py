"""Hostile input: random flag values for every command end in exit 0 or 2 (plan: 1 when nothing fits), one line on
stderr when refused, never a traceback, and `--json` never holds NaN, infinity or negative bytes.

Source of truth: the CLI contract (bad input: one line naming the flag, exit 2). The commands run in-process through
symbolic.cli.entry.main. The jax commands (compile, verify, sweep) run up to their compile, which a stub replaces
(arguments and validation only); formula and latex render the default switches' formulas (the rendering is not
under test here, the arguments are).
"""

import contextlib
import io
import json
import math

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from symbolic.cli.entry import main

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

JUNK_INTS = st.one_of(
    st.integers(-2, 12).map(str),
    st.sampled_from(
        ["0", "-1", "3", "4096", str(2**40), str(2**40 + 1), "9" * 30, "1e3", "1.5", "nan", "inf", "", "x"]
    ),
)
JUNK_SIZES = st.one_of(
    st.sampled_from(
        [
            "0",
            "0.5",
            "1",
            "1e999",
            "1e999GiB",
            "nan",
            "inf",
            "-5GiB",
            "80XB",
            "lots",
            "1e-3GiB",
            str(2**63),
            "9e18",
            "8TiB",
            "",
            "80 GiB",
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.tuples(st.floats(0, 1e22), st.sampled_from(["", "GiB", "GB", "k", "MiB", "T", "b"])).map(
        lambda x: f"{x[0]}{x[1]}"
    ),
)
JUNK_FRACTIONS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(str), st.sampled_from(["0", "-0.1", "x", "", "1.0000001"])
)
INTS = (["1", "2", "4", "8"], JUNK_INTS)  # (values a person means, values that must be refused or survive)
SIZES = (["80GiB", "80G", "141GB", "40GB", "192GiB", "1TiB"], JUNK_SIZES)
FRACTIONS = (["0.8", "1", "0.5", "0.95"], JUNK_FRACTIONS)
TRAINING = {flag: INTS for flag in ("--dp", "--tp", "--pp", "--cp", "--vpp", "--seq", "--mbs", "--gbs")}
# the switches (each set is a derivation): a few sets, conflicting flags, and values that are not allowed
SWITCHES = st.sampled_from(
    [
        [],
        ["--recompute", "full"],
        ["--recompute", "selective", "--no-sp"],
        ["--no-flash-attn", "--zero", "0"],
        ["--recompute", "none", "--recompute", "full"],
        ["--zero", "0", "--dist-opt"],
        ["--no-dist-opt", "--zero", "1"],
        ["--zero", "3"],
        ["--stage-layers", "4,4"],
        ["--stage-layers", "0,8"],
        ["--stage-layers", "x"],
        ["--zero", "1", "--dist-opt"],
        ["--recompute", "sometimes"],
        ["--zero", "2"],
        ["--zero", "x"],
        ["--no-sp", "--no-sp"],
    ]
)


def _choice(valid: list[str], junk: list[str]) -> tuple:
    return valid, st.sampled_from(junk)


def _flags(spec: dict[str, tuple], required: tuple[str, ...] = ()) -> st.SearchStrategy:
    """A {flag: value} of the flags in `spec` ({flag: (valid values, junk strategy)}; `required` always present): half
    of the draws use valid values only (so that accepted runs are common), half mix in junk."""

    def draw(mixed: bool):
        one = {
            flag: st.one_of(st.sampled_from(valid), junk)
            if mixed and valid
            else junk
            if mixed
            else st.sampled_from(valid)
            for flag, (valid, junk) in spec.items()
            if valid or mixed
        }
        return st.fixed_dictionaries(
            {f: one[f] for f in required}, optional={f: one[f] for f in one if f not in required}
        )

    return st.one_of(draw(False), draw(True))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Paths a person may pass: config.json files good and bad, folders, places that cannot be written."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "good").mkdir()
    (root / "good" / "config.json").write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 256,
                "intermediate_size": 688,
                "num_attention_heads": 16,
                "num_key_value_heads": 4,
                "num_hidden_layers": 8,
                "vocab_size": 1024,
            }
        )
    )
    (root / "bad.json").write_text("{not json")
    (root / "latin1.json").write_bytes(b'{"_name_or_path": "caf\xe9"}')
    (root / "huge.json").write_text('{"hidden_size": 1' + "0" * 400 + "}")
    (root / "grid.toml").write_text('[base]\nmodel = "tiny"\nseq = 128\n[grid]\ntp = [1, 2]\n')
    (root / "empty.toml").write_text("# nothing\n")
    (root / "latin1.toml").write_bytes(b'[base]\nmodel = "caf\xe9"\n')
    (root / "a_file").write_text("x")
    return root


def _paths(root, good: list[str], bad: list[str] = ()) -> tuple:
    # no path a command may create: sweep makes its output's folders, so "/nonexistent/o" once made /nonexistent on the
    # machine and broke tests/test_cli_contract.py's missing folder; a path under a file can never be made
    return [str(root / n) for n in good], st.sampled_from(
        [str(root / n) for n in bad] + ["/proc/x/y", str(root / "a_file" / "o"), ""]
    )


def _models(root) -> tuple:
    return _choice(
        ["tiny", "llama3-8b", "llama2-7b", str(root / "good")],
        [
            "llama9",
            "",
            str(root / "bad.json"),
            str(root / "latin1.json"),
            str(root / "huge.json"),
            str(root / "missing.json"),
            str(root / "a_file"),
        ],
    )


def _argv(flags: dict) -> list[str]:
    return [x for flag, value in flags.items() for x in (flag, value)]


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _numbers(node, key=""):
    """(key, number) of every number in a JSON document, with the key it sits under."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _numbers(v, k if k not in ("bytes", "symbolic") else f"{k}_bytes")
    elif isinstance(node, list):
        for v in node:
            yield from _numbers(v, key)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield key, node


def _check(argv: list[str], rc: int, out: str, err: str, allowed=(0, 2)) -> None:
    assert "Traceback" not in err + out, (argv, err)
    assert rc in allowed, (argv, rc, err)
    event(f"{argv[0]}: exit {rc}")
    if rc == 2:
        assert len(err.strip().splitlines()) == 1 and "error:" in err, (argv, err)
    if rc == 0 and "--json" in argv:
        for key, value in _numbers(json.loads(out)):
            assert math.isfinite(value), (argv, key, value)
            assert not key.endswith("bytes") or value >= 0, (argv, key, value)


@pytest.fixture
def rendered_defaults(monkeypatch):
    """formula renders the default switches' formulas whatever the flags, latex leaves its formulas section out (a
    rendering costs seconds cold)."""
    from symbolic.config.switches import Switches
    from symbolic.render import rendered as module
    from symbolic.render import report

    real = module.rendered
    monkeypatch.setattr(module, "rendered", lambda profile, switches: real(profile, Switches()))
    monkeypatch.setattr(report, "_formulas", lambda *args: [])


@pytest.fixture
def no_compile(monkeypatch):
    """compile, verify and sweep stop where the compile would start: SystemExit(0) says the arguments passed."""
    import jaxcheck.card
    import jaxcheck.crosscheck.verify
    import jaxcheck.crosscheck.workers
    from symbolic.cli import compile as cmd_compile
    from symbolic.cli import sweep as cmd_sweep

    def reached(*args, **kwargs):
        raise SystemExit(0)

    monkeypatch.setattr(jaxcheck.card, "compile_for", reached)
    monkeypatch.setattr(jaxcheck.crosscheck.verify, "verify", reached)
    monkeypatch.setattr(jaxcheck.crosscheck.workers, "run_parallel", reached)
    monkeypatch.setattr(cmd_compile, "_run_on_processes", reached)
    monkeypatch.setattr(cmd_sweep, "_start_backend", reached)


def _run_reaching(argv) -> tuple[int, str, str]:
    """_run; exit 0 with no output when the stub was reached (the arguments were accepted)."""
    try:
        return _run(argv)
    except SystemExit as stop:
        assert stop.code == 0
        return 0, "{}", ""


def test_estimate(files):
    @SETTINGS
    @given(
        _flags(
            {
                **TRAINING,
                "--model": _models(files),
                "--gpu-mem": SIZES,
                "--threshold": FRACTIONS,
                "--profile": _choice(["paper", "jax"], ["x"]),
                "--overhead": _choice(
                    ["cuda_context=1GiB", "fragmentation=0"],
                    ["nope=1GiB", "=1", "cuda_context", "cuda_context=1e999", "cuda_context=x"],
                ),
            }
        ),
        SWITCHES,
        st.booleans(),
    )
    def check(flags, switches, as_json):
        argv = ["estimate", *_argv(flags), *switches] + (["--json"] if as_json else [])
        _check(argv, *_run(argv))

    check()


def test_plan(files, tmp_cwd):
    """The paper profile with sequence parallelism: each other switch set is six more estimator derivations. Half the
    other commands' examples: each accepted plan searches a cluster (17 s of the suite's time at 60)."""

    @settings(SETTINGS, max_examples=30)
    @given(
        _flags(
            {
                "--gpus": (["8", "16", "64", "512"], JUNK_INTS),
                "--seq": (["128", "1024", "4096"], JUNK_INTS),
                "--gbs": (["8", "64", "1024"], JUNK_INTS),
                "--model": _models(files),
                "--gpu-mem": SIZES,
                "--threshold": FRACTIONS,
                "--gpus-per-node": INTS,
                "--top": INTS,
                "--zero": _choice(["0", "1"], ["2", "x"]),
                "--csv": _paths(files, ["out.csv"], ["a_file", "good"]),
                "--plot": _paths(files, ["p.png", "p.svg"], ["p.txt", "p", "a_file"]),
                "--profile": _choice(["paper"], ["x"]),
            },
            required=("--gpus", "--seq", "--gbs"),
        ),
        st.sampled_from([[], ["--json"], ["--dist-opt", "--zero", "0"], ["--json", "--csv", "x.csv"]]),
    )
    def check(flags, extra):
        argv = ["plan", *_argv(flags), *extra]
        _check(argv, *_run(argv), allowed=(0, 1, 2))

    check()


def test_formula_and_latex(files, rendered_defaults, tmp_cwd):
    @SETTINGS
    @given(
        st.sampled_from(["formula", "latex"]),
        _flags(
            {
                "--profile": _choice(["paper", "jax"], ["x"]),
                "--backend": _choice(["gpu", "cpu"], ["tpu"]),
                "-o": _paths(files, ["r.tex"], ["a_file", "good"]),
                "--gpu-mem": SIZES,
                "--threshold": FRACTIONS,
                **TRAINING,
            }
        ),
        SWITCHES,
        st.sampled_from([[], ["--json"], ["--latex"], ["--latex", "--json"], ["total"], ["nope"], ["--no-overheads"]]),
    )
    def check(command, flags, switches, extra):
        if command == "formula":
            flags = {k: v for k, v in flags.items() if k in ("--profile", "--backend")}
        else:  # the paper profile: a jax estimator per switch set costs seconds to derive
            flags = {k: v for k, v in flags.items() if k not in ("--backend", "--profile")}
            extra = [x for x in extra if x == "--no-overheads"]
        argv = [command, *_argv(flags), *switches, *extra]
        _check(argv, *_run(argv))

    check()


def test_jax_commands_up_to_the_compile(files, no_compile, tmp_cwd):
    step = {
        **TRAINING,
        "--model": _models(files),
        "--remat": _choice(["none", "full"], ["x"]),
        "--param-dtype": _choice(["float32", "bfloat16"], ["int8"]),
        "--target": _choice(["cpu", "h100-80gb"], ["tpu"]),
        "--target-config": ([], st.just(str(files / "a_file"))),
    }
    processes = {
        "--num-processes": INTS,
        "--process-id": (["0", "1"], JUNK_INTS),
        "--coordinator": _choice(["localhost:1234"], ["h", ":9", "h:0", "h:x"]),
        "--mock-gpu-topology": _choice(["1x2x4"], ["2x2", "0x1x1"]),
    }
    sweep = {
        "-o": _paths(files, ["out/r.jsonl"], ["a_file", "good"]),
        "--plots": _paths(files, ["plots"], ["a_file"]),
        "--jobs": INTS,
        "--shard": _choice(["0/2", "1/2"], ["2/2", "x", "1/0"]),
        "--target": _choice(["cpu", "h100-80gb"], ["tpu"]),
        "--target-config": ([], st.just(str(files / "a_file"))),
        "grid": _paths(files, ["grid.toml"], ["empty.toml", "latin1.toml", "missing.toml", "good"]),
    }
    options = {"compile": _flags({**step, **processes}), "verify": _flags(step), "sweep": _flags(sweep)}

    @SETTINGS
    @given(
        st.sampled_from(list(options)).flatmap(lambda c: st.tuples(st.just(c), options[c])),
        SWITCHES,
        st.sampled_from(
            [
                [],
                ["--json"],
                ["--zero1", "--zero", "0"],
                ["--json", "--markdown"],
                ["--no-plots"],
                ["--plots", "p", "--no-plots"],
                ["--resume"],
            ]
        ),
    )
    def check(command_flags, switches, extra):
        command, flags = command_flags
        if command == "sweep":
            grid = flags.pop("grid", str(files / "grid.toml"))
            flags.setdefault("-o", str(files / "out" / "r.jsonl"))
            argv = ["sweep", grid, *_argv(flags), *extra]
        else:
            extra = [x for x in extra if x in ("--json", "--zero1", "--zero", "0")]
            argv = [command, *_argv(flags), *switches, *extra]
        _check(argv, *_run_reaching(argv))

    check()


def test_report_up_to_the_build(files, monkeypatch, tmp_cwd):
    """`mem4d report`'s flags (its output, --from, --plan) up to building the document, which a stub replaces."""
    from symbolic.cli import report

    def reached(*args, **kwargs):
        raise SystemExit(0)

    monkeypatch.setattr(report, "build", reached)
    (files / "bad.jsonl").write_text("{not json\n")

    @SETTINGS
    @given(
        _flags(
            {
                **TRAINING,
                "--model": _models(files),
                "--gpu-mem": SIZES,
                "--threshold": FRACTIONS,
                "-o": _paths(files, ["r.tex", "r.pdf"], ["r.txt", "good", "a_file"]),
                "--from": ([], st.sampled_from([str(files / "bad.jsonl"), str(files / "a_file"), "/nonexistent"])),
                "--gpus": INTS,
                "--top": INTS,
            }
        ),
        SWITCHES,
        st.sampled_from([[], ["--plan"], ["--json"], ["--balance"], ["--balance", "--stage-layers", "4,4"]]),
    )
    def check(flags, switches, extra):
        argv = ["report", *_argv(flags), *switches, *extra]
        _check(argv, *_run_reaching(argv))

    check()


def test_web_up_to_the_build(files, monkeypatch, tmp_cwd):
    """`mem4d web`'s flags (its models, good and bad config.json files, -o, --serve, --port) up to building the site,
    which a stub replaces; each bad config.json is refused in one line naming it (exit 2) before the build."""
    from symbolic.web import build

    def reached(*args, **kwargs):
        raise SystemExit(0)

    monkeypatch.setattr(build, "build", reached)

    @settings(SETTINGS, max_examples=30)
    @given(
        _flags(
            {
                "--model": _models(files),
                "-o": _paths(files, ["site", "good"], ["a_file"]),
                "--port": (["8000", "8080"], JUNK_INTS),
                "--formulas": _choice(["all", "defaults"], ["x", ""]),
            },
            required=("--model", "-o"),
        ),
        st.sampled_from([[], ["--serve"]]),
    )
    def check(flags, extra):
        argv = ["web", *_argv(flags), *extra]
        _check(argv, *_run_reaching(argv))

    check()
    for bad in ("bad.json", "latin1.json", "huge.json", "missing.json", "a_file"):
        rc, _, err = _run(["web", "--model", str(files / bad), "-o", str(tmp_cwd / "site")])
        assert rc == 2 and len(err.strip().splitlines()) == 1 and str(files / bad) in err, (bad, rc, err)
