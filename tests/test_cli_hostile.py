"""Hostile input: random flag values for every command end in exit 0 or 2 (plan: 1 when nothing fits), one line on
stderr when refused, never a traceback, and `--json` never holds NaN, infinity or negative bytes.

Source of truth: the CLI contract (bad input: one line naming the flag, exit 2). The commands run in-process through
symbolic.cli.entry.main. The jax commands (compile, verify, sweep) run up to their compile, which a stub replaces
(arguments and validation only); formula and latex render the default switches' formulas (the rendering is not
under test here, the arguments are).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hostile_flags import (
    FIT,
    configuration,
    INTS,
    JUNK_INTS,
    SETTINGS,
    SWITCHES,
    TRAINING,
    argv_of,
    choice,
    flag_dicts,
    held_to_contract,
    models,
    paths,
    run,
    run_reaching,
    write_files,
)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Paths a person may pass: config.json files good and bad, folders, places that cannot be written."""
    return write_files(tmp_path_factory.mktemp("hostile"))


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


def test_estimate(files):
    @SETTINGS
    @given(
        flag_dicts(
            {
                **configuration(files),
                "--profile": choice(["paper", "jax"], ["x"]),
                "--overhead": choice(
                    ["cuda_context=1GiB", "fragmentation=0"],
                    ["nope=1GiB", "=1", "cuda_context", "cuda_context=1e999", "cuda_context=x"],
                ),
            }
        ),
        SWITCHES,
        st.booleans(),
    )
    def check(flags, switches, as_json):
        argv = ["estimate", *argv_of(flags), *switches] + (["--json"] if as_json else [])
        held_to_contract(argv, *run(argv))

    check()


def test_plan(files, tmp_cwd):
    """The paper profile with sequence parallelism: each other switch set is six more estimator derivations. Half the
    other commands' examples: each accepted plan searches a cluster (17 s of the suite's time at 60)."""

    @settings(SETTINGS, max_examples=30)
    @given(
        flag_dicts(
            {
                "--gpus": (["8", "16", "64", "512"], JUNK_INTS),
                "--seq": (["128", "1024", "4096"], JUNK_INTS),
                "--gbs": (["8", "64", "1024"], JUNK_INTS),
                "--model": models(files),
                **FIT,
                "--gpus-per-node": INTS,
                "--top": INTS,
                "--zero": choice(["0", "1"], ["2", "x"]),
                "--csv": paths(files, ["out.csv"], ["a_file", "good"]),
                "--plot": paths(files, ["p.png", "p.svg"], ["p.txt", "p", "a_file"]),
                "--profile": choice(["paper"], ["x"]),
            },
            required=("--gpus", "--seq", "--gbs"),
        ),
        st.sampled_from([[], ["--json"], ["--dist-opt", "--zero", "0"], ["--json", "--csv", "x.csv"]]),
    )
    def check(flags, extra):
        argv = ["plan", *argv_of(flags), *extra]
        held_to_contract(argv, *run(argv), allowed=(0, 1, 2))

    check()


def test_formula_and_latex(files, rendered_defaults, tmp_cwd):
    @SETTINGS
    @given(
        st.sampled_from(["formula", "latex"]),
        flag_dicts(
            {
                "--profile": choice(["paper", "jax"], ["x"]),
                "--backend": choice(["gpu", "cpu"], ["tpu"]),
                "-o": paths(files, ["r.tex"], ["a_file", "good"]),
                **FIT,
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
        argv = [command, *argv_of(flags), *switches, *extra]
        held_to_contract(argv, *run(argv))

    check()


def test_jax_commands_up_to_the_compile(files, no_compile, tmp_cwd):
    step = {
        **TRAINING,
        "--model": models(files),
        "--remat": choice(["none", "full"], ["x"]),
        "--param-dtype": choice(["float32", "bfloat16"], ["int8"]),
        "--target": choice(["cpu", "h100-80gb"], ["tpu"]),
        "--target-config": ([], st.just(str(files / "a_file"))),
    }
    processes = {
        "--num-processes": INTS,
        "--process-id": (["0", "1"], JUNK_INTS),
        "--coordinator": choice(["localhost:1234"], ["h", ":9", "h:0", "h:x"]),
        "--mock-gpu-topology": choice(["1x2x4"], ["2x2", "0x1x1"]),
    }
    sweep = {
        "-o": paths(files, ["out/r.jsonl"], ["a_file", "good"]),
        "--plots": paths(files, ["plots"], ["a_file"]),
        "--jobs": INTS,
        "--shard": choice(["0/2", "1/2"], ["2/2", "x", "1/0"]),
        "--target": choice(["cpu", "h100-80gb"], ["tpu"]),
        "--target-config": ([], st.just(str(files / "a_file"))),
        "grid": paths(files, ["grid.toml"], ["empty.toml", "latin1.toml", "missing.toml", "good"]),
    }
    options = {"compile": flag_dicts({**step, **processes}), "verify": flag_dicts(step), "sweep": flag_dicts(sweep)}

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
            argv = ["sweep", grid, *argv_of(flags), *extra]
        else:
            extra = [x for x in extra if x in ("--json", "--zero1", "--zero", "0")]
            argv = [command, *argv_of(flags), *switches, *extra]
        held_to_contract(argv, *run_reaching(argv))

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
        flag_dicts(
            {
                **configuration(files),
                "-o": paths(files, ["r.tex", "r.pdf"], ["r.txt", "good", "a_file"]),
                "--from": ([], st.sampled_from([str(files / "bad.jsonl"), str(files / "a_file"), "/nonexistent"])),
                "--gpus": INTS,
                "--top": INTS,
            }
        ),
        SWITCHES,
        st.sampled_from([[], ["--plan"], ["--json"], ["--balance"], ["--balance", "--stage-layers", "4,4"]]),
    )
    def check(flags, switches, extra):
        argv = ["report", *argv_of(flags), *switches, *extra]
        held_to_contract(argv, *run_reaching(argv))

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
        flag_dicts(
            {
                "--model": models(files),
                "-o": paths(files, ["site", "good"], ["a_file"]),
                "--port": (["8000", "8080"], JUNK_INTS),
                "--formulas": choice(["all", "defaults"], ["x", ""]),
            },
            required=("--model", "-o"),
        ),
        st.sampled_from([[], ["--serve"]]),
    )
    def check(flags, extra):
        argv = ["web", *argv_of(flags), *extra]
        held_to_contract(argv, *run_reaching(argv))

    check()
    for bad in ("bad.json", "latin1.json", "huge.json", "missing.json", "a_file"):
        rc, _, err = run(["web", "--model", str(files / bad), "-o", str(tmp_cwd / "site")])
        assert rc == 2 and len(err.strip().splitlines()) == 1 and str(files / bad) in err, (bad, rc, err)
