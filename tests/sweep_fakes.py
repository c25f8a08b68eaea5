"""What tests/test_sweep.py gives `mem4d sweep`'s runner: a grid of tiny configurations
(one skipped, one duplicate), the command's parsed arguments, and a verify()-shaped result made from the spec alone
(the runner only stores it), so that the runner's tests take milliseconds."""

import argparse
import json

from symbolic.cli import sweep as cmd_sweep


GRID = """
[base]
model = "tiny"
seq = 128

[grid]
tp = [1, 2]
recompute = ["none", "full"]

[[case]]
pp = 2
gbs = 4
zero = 1

[[case]]
pp = 3          # does not divide L = 8: skipped with its reason

[[case]]
tp = 1          # the same as the first grid point: dropped as a duplicate
"""


def sweep_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cmd_sweep.add_arguments(parser)
    return parser.parse_args(list(argv))


def fake_result(spec, err: float = 0.01) -> dict:
    """A verify()-shaped dict whose numbers derive from the spec (the runner only stores them)."""
    xla_total = 1000 * spec.train.world + spec.train.s
    sym = {"params": 600, "activations": round(xla_total * (1 + err)) - 600}
    sym["total"] = sum(sym.values())
    xla = {
        "argument_bytes": 600,
        "output_bytes": 600,
        "alias_bytes": 600,
        "temp_bytes": xla_total - 600,
        "total_bytes": xla_total,
    }
    comps = [
        {"name": "arguments", "symbolic": 600, "xla": 600, "rel_error": 0.0},
        {"name": "activations", "symbolic": sym["activations"], "xla": None, "rel_error": None},
    ]
    return {"symbolic": sym, "xla": xla, "components": comps, "rel_error_total": (sym["total"] - xla_total) / xla_total}


def json_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]
