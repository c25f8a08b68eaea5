"""`mem4d plan --ep E` / `--etp T`: the expert-parallel degrees fixed in every row, judged by the rule table estimate's
--ep and --etp answer to (config.rules: E % e, e t_e | d t c, f_e % t_e, e > 1 needs experts), one line and exit 2
where no configuration can hold them, a repeated flag refused as every other.

Source of truth: plan's own search without the flag (its rows with that ep are exactly the rows with --ep; tolerance:
none) and the rule table's messages."""

import json

import numpy as np
import pytest

from symbolic.cli.entry import main
from symbolic.config.shapes import PRESETS
from symbolic.plan.enumerate import Cluster, valid

SMALL = ["--model", "tiny-moe", "--gpus", "16", "--seq", "256", "--gbs", "32"]


def mem4d(capsys, *argv: str) -> tuple[int, str, str]:
    """`mem4d plan ARGV` in this process (symbolic.cli.entry.main): exit code, stdout, stderr."""
    rc = main(["plan", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _rows(**fixed) -> set[tuple]:
    grid, _ = valid(Cluster(PRESETS["tiny-moe"], gpus=16, s=256, gbs=32, **fixed))
    return set(zip(*(grid[name].tolist() for name in ("d", "t", "p", "c", "e", "t_e", "vpp", "b", "zero", "split"))))


@pytest.mark.parametrize("ep", [1, 2, 8])
def test_fixed_ep_keeps_exactly_the_searched_rows_with_it(ep):
    assert _rows(ep=ep) == {row for row in _rows() if row[4] == ep} != set()


@pytest.mark.parametrize("ep, etp", [(None, 1), (None, 2), (4, 2)])
def test_fixed_etp_holds_in_every_row(ep, etp):
    """--etp T: every row's t_e is T (any T, as estimate's --etp); where the search's {1, t} holds T, the same rows."""
    fixed = _rows(ep=ep, etp=etp)
    searched = {row for row in _rows() if (ep is None or row[4] == ep) and row[5] == etp}
    assert fixed and {row[5] for row in fixed} == {etp} and (ep is None or {row[4] for row in fixed} == {ep})
    assert {row for row in fixed if etp in (1, row[1])} == searched


def test_plan_ep_fixes_ep_in_every_row(capsys):
    rc, out, err = mem4d(capsys, *SMALL, "--gpu-mem", "8GiB", "--ep", "4", "--rank-by", "proxy", "--json")
    assert rc == 0, err
    rows = [row["config"] for row in json.loads(out)["configs"]]
    assert len(rows) == 10 and {row["ep"] for row in rows} == {4}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--ep", "3"], "ep x etp = 3x1 must divide the dp x tp x cp"),  # divides neither E = 8 nor 16 ranks
        (["--ep", "32"], "ep x etp = 32x1 must divide"),
        (["--etp", "3"], "ep x etp = 1x3 must divide"),
        (["--ep", "4", "--ep", "8"], "--ep given twice (--ep 4, then --ep 8): give it once"),
        (["--etp", "2", "--etp", "1"], "--etp given twice"),
        (["--model", "tiny", "--ep", "2"], "--ep 2 / --etp 1: tiny has no routed experts"),
    ],
)
def test_an_ep_no_configuration_holds_is_one_line_exit_2(capsys, argv, message):
    base = dict(zip(SMALL[::2], SMALL[1::2]))
    base.update((flag, value) for flag, value in zip(argv[::2], argv[1::2]) if flag == "--model")
    rest = [x for flag, value in zip(argv[::2], argv[1::2]) if flag != "--model" for x in (flag, value)]
    rc, out, err = mem4d(capsys, *(x for item in base.items() for x in item), *rest)
    assert rc == 2, out
    assert err.count("\n") == 1 and message in err and err.startswith("mem4d plan: error:")


def test_a_dense_model_with_ep_1_plans_as_without():
    grid, _ = valid(Cluster(PRESETS["tiny"], gpus=16, s=256, gbs=32, ep=1))
    plain, _ = valid(Cluster(PRESETS["tiny"], gpus=16, s=256, gbs=32))
    assert "e" not in grid and all(np.array_equal(grid[name], plain[name]) for name in plain)
