"""The hostile inputs of tests/test_cli_hostile.py: hypothesis strategies of flag values a person means and junk that
must be refused or survive, the paths a person may pass, and the check every run is held to (exit 0 or 2, one line on
stderr when refused, never a traceback, `--json` without NaN, infinity or negative bytes)."""

import contextlib
import io
import json
import math

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

from model_files import LLAMA, write

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
FIT = {"--gpu-mem": SIZES, "--threshold": FRACTIONS}  # what a fit verdict reads
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


def choice(valid: list[str], junk: list[str]) -> tuple:
    return valid, st.sampled_from(junk)


def flag_dicts(spec: dict[str, tuple], required: tuple[str, ...] = ()) -> st.SearchStrategy:
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


def paths(root, good: list[str], bad: list[str] = ()) -> tuple:
    # no path a command may create: sweep makes its output's folders, so "/nonexistent/o" once made /nonexistent on the
    # machine and broke tests/test_cli_contract.py's missing folder; a path under a file can never be made
    return [str(root / n) for n in good], st.sampled_from(
        [str(root / n) for n in bad] + ["/proc/x/y", str(root / "a_file" / "o"), ""]
    )


def configuration(root) -> dict:
    """The flags of one training configuration of a model and its fit: TRAINING's, --model, FIT's."""
    return {**TRAINING, "--model": models(root), **FIT}


def models(root) -> tuple:
    return choice(
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


def argv_of(flags: dict) -> list[str]:
    return [x for flag, value in flags.items() for x in (flag, value)]


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def numbers(node, key=""):
    """(key, number) of every number in a JSON document, with the key it sits under."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from numbers(v, k if k not in ("bytes", "symbolic") else f"{k}_bytes")
    elif isinstance(node, list):
        for v in node:
            yield from numbers(v, key)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield key, node


def held_to_contract(argv: list[str], rc: int, out: str, err: str, allowed=(0, 2)) -> None:
    assert "Traceback" not in err + out, (argv, err)
    assert rc in allowed, (argv, rc, err)
    event(f"{argv[0]}: exit {rc}")
    if rc == 2:
        assert len(err.strip().splitlines()) == 1 and "error:" in err, (argv, err)
    if rc == 0 and "--json" in argv:
        for key, value in numbers(json.loads(out)):
            assert math.isfinite(value), (argv, key, value)
            assert not key.endswith("bytes") or value >= 0, (argv, key, value)


def run_reaching(argv) -> tuple[int, str, str]:
    """run; exit 0 with no output when the stub was reached (the arguments were accepted)."""
    try:
        return run(argv)
    except SystemExit as stop:
        assert stop.code == 0
        return 0, "{}", ""


def write_files(root):
    """Paths a person may pass, written under root: config.json files good and bad, folders, places that cannot be
    written."""
    (root / "good").mkdir()
    write(root / "good", LLAMA)
    (root / "bad.json").write_text("{not json")
    (root / "latin1.json").write_bytes(b'{"_name_or_path": "caf\xe9"}')
    (root / "huge.json").write_text('{"hidden_size": 1' + "0" * 400 + "}")
    (root / "grid.toml").write_text('[base]\nmodel = "tiny"\nseq = 128\n[grid]\ntp = [1, 2]\n')
    (root / "empty.toml").write_text("# nothing\n")
    (root / "latin1.toml").write_bytes(b'[base]\nmodel = "caf\xe9"\n')
    (root / "a_file").write_text("x")
    return root
