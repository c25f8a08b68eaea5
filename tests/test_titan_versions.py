"""torchtitan versions and the torchtitan rows of ../shared/data/measured/RUNS.md.

Sources of truth: records/titan-versions-cpu.jsonl (each version's own TransformerBlock run on the CPU under
saved-tensor hooks by benchmarks/titan_versions.py: torch needed to make it, not to read it); RUNS.md section B (its
torchtitan table, written independently of mem4d) for the job files benchmarks/published_titan.py writes. Exact: no
tolerance (shapes, dtypes, byte counts and parallel degrees are integers)."""

import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest

from symbolic.cli.entry import main
from symbolic.readers.torchtitan import read
from symbolic.readers.torchtitan_versions import VERSIONS

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT.parent / "shared" / "data" / "measured"
LISTING = ROOT / "records" / "titan-versions-cpu.jsonl"
JOB = ROOT / "records" / "published" / "torchtitan" / "TT-04.toml"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _listings() -> dict:
    rows = [json.loads(line) for line in LISTING.read_text().splitlines()]
    return {(r["version"], r["float8"]): r for r in rows}


def test_every_version_listed_and_only_the_norms_differ_from_9dec370():
    """Each version mem4d accepts was run (eager and tensorwise Float8), and its block keeps 9dec370's tensors but for
    the two norms' normalised values, fp32 instead of bf16 (+2 h bytes a token each: the note --torchtitan-version
    prints) and, in 0.3.0, the RoPE factors gathered by each row's positions (a complex [b, s, 1, dh/2])."""
    listings = _listings()
    base = listings[("9dec370", "none")]
    b, s, h = (base["sizes"][x] for x in "bsh")
    for version in VERSIONS:
        for float8 in ("none", "tensorwise"):
            assert "error" not in listings[(version, float8)], (version, float8)
        if version == "9dec370":
            continue
        mine = listings[(version, "none")]["tensors"]
        rope = [t for t in mine if t["dtype"] == "complex64"]
        assert [t["shape"][:2] for t in rope] == ([[b, s]] if version == "0.3.0" else []), version
        mine = [t for t in mine if t not in rope]
        assert len(mine) == len(base["tensors"]), version
        changed = [
            (x, y) for x, y in zip(base["tensors"], mine) if (x["shape"], x["dtype"]) != (y["shape"], y["dtype"])
        ]
        assert len(changed) == 2, version
        assert all(
            x["shape"] == y["shape"] == [b, s, h] and (x["dtype"], y["dtype"]) == ("bfloat16", "float32")
            for x, y in changed
        ), version
        extra = sum(t["bytes"] for t in mine) - base["bytes"]
        assert extra == 2 * 2 * b * s * h, version  # +2 bytes an element, two norms


def test_version_flag_accepts_the_versions_read_and_refuses_others():
    """9dec370 (the recipe's) gives no note; 0.1.0 the same figures with the norms' note; 0.2.0 (not read) one line."""
    runs = {
        v: run("estimate", "--torchtitan", str(JOB), "--gpus", "8", "--json", "--torchtitan-version", v)
        for v in ("9dec370", "0.1.0")
    }
    (code, base, _), (code_new, new, _) = runs["9dec370"], runs["0.1.0"]
    base, new = json.loads(base), json.loads(new)
    assert code == code_new == 0 and base["memory"] == new["memory"]
    assert not any("torchtitan 9dec370" in note for note in base["torchtitan"]["overridden"])
    assert any("torchtitan 0.1.0" in note and "nn.RMSNorm" in note for note in new["torchtitan"]["overridden"])
    code, _, err = run("estimate", "--torchtitan", str(JOB), "--gpus", "8", "--torchtitan-version", "0.2.0")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "0.2.0" in err and "Traceback" not in err
    code, _, err = run("estimate", "--model", "llama3-8b", "--recipe", "torchtitan", "--torchtitan-version", "0.1.0")
    assert code == 2 and "give the file" in err


@pytest.mark.skipif(not (MEASURED / "RUNS.md").exists(), reason="../shared/data/measured is absent")
def test_runs_md_torchtitan_rows_as_job_files(tmp_path):
    """The 8 rows, each job file read back with RUNS.md's GPUs = FSDP x TP x PP x CP, batch and sequence."""
    spec = importlib.util.spec_from_file_location("published_titan", ROOT / "benchmarks" / "published_titan.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["published_titan"] = module
    spec.loader.exec_module(module)
    rows = module.rows_of()
    assert [r.id for r in rows] == ["TT-04", "TT-05", "TT-06", "TT-07", "TT-11", "TT-13", "TT-15", "TT-16"]
    for row in rows:
        path = tmp_path / f"{row.id}.toml"
        path.write_text(row.job())
        assert path.read_text() == (ROOT / "records" / "published" / "torchtitan" / f"{row.id}.toml").read_text()
        overrides = ["parallelism.enable_async_tensor_parallel=false"] if row.async_tp else []
        training = read(str(path), overrides).training
        d = row.degrees
        assert (training["dp"], training["tp"], training["pp"], training["cp"]) == (
            d["FSDP"],
            d.get("TP", 1),
            d.get("PP", 1),
            d.get("CP", 1),
        )
        assert training["dp"] * training["tp"] * training["pp"] * training["cp"] == row.gpus
        assert training["seq"] == row.seq and training["recompute"] == "full" and training["compile"]
        assert training["mbs"] == (row.microbatch if training["pp"] > 1 else row.local_batch)
    assert [r.async_tp for r in rows] == [False] * 5 + [True] * 3


def test_9dec370s_own_block_saves_what_the_recipe_counts():
    """The recipe's eager block (read from benchmarks/titan_block.py's rewrite of 9dec370) equals what 9dec370's own
    model.py saved when run (records/titan-versions-cpu.jsonl, debugmodel: h 256, 16 heads, no GQA, FFN 768), byte
    for byte, eager and with tensorwise Float8 (torchao's eager Float8Linear keeps the bf16 input)."""
    import sympy as sp

    from symbolic.config import symbols as S
    from symbolic.config.switches import Switches
    from symbolic.recipes.torchtitan.fsdp2 import unchecked_tensors

    listings = _listings()
    z = listings[("9dec370", "none")]["sizes"]
    at = {S.b: z["b"], S.s: z["s"], S.h: 256, S.a: 16, S.k: 16, S.dh: 16, S.f: 768, S.t: 1, S.c: 1, S.B_a: 2}
    recipe = sp.Add(*(part.expr for part in unchecked_tensors(Switches()))).subs(at)
    for float8 in ("none", "tensorwise"):
        assert recipe == listings[("9dec370", float8)]["bytes"], float8
