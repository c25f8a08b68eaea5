"""mem4d sweep's summary and plots: the median, range and worst configurations of hand-made records, and the
figures written from them.

Source of truth: relative errors computed by hand for the records below (HAND); exact to float rounding.
"""

import json

import pytest

from jaxcheck.crosscheck import report, sweep


def _record(key: str, status: str, err: float | None = None, comps: list | None = None) -> dict:
    result = None
    if status == "ok":
        xla_total = 1000
        result = {
            "symbolic": {"a": round(xla_total * (1 + err)) - 100, "b": 100, "total": round(xla_total * (1 + err))},
            "xla": {
                "argument_bytes": 300,
                "output_bytes": 300,
                "alias_bytes": 300,
                "temp_bytes": 700,
                "total_bytes": xla_total,
            },
            "components": comps or [],
            "rel_error_total": err,
        }
    return {
        "key": key,
        "label": key,
        "config": {},
        "status": status,
        "error": None if status == "ok" else "why",
        "result": result,
        "seconds": 1.0,
    }


def _arg(sym, xla):
    return {"name": "arguments", "symbolic": sym, "xla": xla, "rel_error": (sym - xla) / xla}


HAND = [  # rel errors by hand: k1 +0.01, k2 -0.04 (its first record +0.30 is replaced by the retry), k3 +0.02, k4 -0.005
    _record("k2", "ok", 0.30, [_arg(300, 300)]),
    _record("k1", "ok", 0.01, [_arg(300, 300), {"name": "temp", "symbolic": 710, "xla": 700, "rel_error": 10 / 700}]),
    _record("k2", "ok", -0.04, [_arg(300, 300), {"name": "temp", "symbolic": 665, "xla": 700, "rel_error": -35 / 700}]),
    _record("k3", "ok", 0.02, [_arg(300, 300), {"name": "act", "symbolic": 5, "xla": None, "rel_error": None}]),
    _record("k4", "ok", -0.005, [_arg(301, 300)]),
    _record("k5", "failed"),
    _record("k6", "skipped"),
]


def test_summary_numbers_by_hand(tmp_path):
    """Source of truth: the numbers written in HAND; medians/maxima worked out by hand (exact up to float rounding)."""
    path = tmp_path / "hand.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in HAND))
    s = report.summarize(sweep.read_results(path), worst=2)
    assert (s["count"], s["ok"], s["failed"], s["skipped"]) == (6, 4, 1, 1)
    # |errors| 0.01, 0.04, 0.02, 0.005 -> sorted 0.005 0.01 0.02 0.04 -> median 0.015, max 0.04
    assert s["rel_error_total"]["median_abs"] == pytest.approx(0.015, abs=1e-12)
    assert s["rel_error_total"]["max_abs"] == pytest.approx(0.04, abs=1e-12)
    assert [w["key"] for w in s["worst"]] == ["k2", "k3"]
    assert s["worst"][0]["rel_error_total"] == -0.04 and s["worst"][0]["xla_total_bytes"] == 1000
    # temp: |10/700|, |35/700| -> median 22.5/700, max 35/700; act has no XLA figure so it is not listed
    assert s["components"]["temp"] == {
        "n": 2,
        "median_abs": pytest.approx(22.5 / 700),
        "max_abs": pytest.approx(35 / 700),
    }
    assert "act" not in s["components"] and s["components"]["arguments"]["n"] == 4
    assert s["argument_bytes_exact"] is False and s["argument_bytes_checked"] == 4  # k4: 301 vs 300
    assert s["failed_configs"] == [{"label": "k5", "error": "why"}]
    md = report.markdown(s)  # the README form carries the same numbers
    assert "| 6 | 4 | 1 | 1 | 1.50 % | 4.00 % | NOT exact in 4 |" in md and "| k2 | 0.000 | 0.000 | -4.00 % |" in md


def test_plots_written(tmp_path):
    """Both PNGs are written (non-empty, PNG signature) from the hand-made records."""
    paths = report.plot(HAND, tmp_path / "plots", "hand")
    assert [p.name for p in paths] == ["hand.scatter.png", "hand.components.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000
