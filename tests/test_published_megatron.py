"""benchmarks/published_megatron.py: the table of the 22 Megatron-LM functional-test runs of ../shared/data/measured.

Source of truth: RUNS.md (its summary table's world sizes, parallel sizes and peak GiB, written independently of the
reader) and the verbatim model_config.yaml files. Tolerance: exact for sizes; the measured peak to RUNS.md's 3
decimals of GiB (0.0005 GiB: RUNS.md rounds)."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT.parent / "shared" / "data" / "measured"
pytestmark = pytest.mark.skipif(not (MEASURED / "RUNS.md").exists(), reason="../shared/data/measured is absent")


def _module():
    spec = importlib.util.spec_from_file_location("published_megatron", ROOT / "benchmarks" / "published_megatron.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["published_megatron"] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def _summary() -> dict[str, list[str]]:
    """RUNS.md's summary rows by id."""
    out = {}
    for line in (MEASURED / "RUNS.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if re.fullmatch(r"MB-\d+", cells[0]):
            out[cells[0]] = cells
    return out


def test_every_case_read_with_runs_md_world_and_peak():
    pm, summary = _module(), _summary()
    cases = pm.cases()
    configs = [p for p in (MEASURED / "megatron").glob("*.model_config.yaml") if ".at_" not in p.name]
    assert len(cases) == len(summary) == len(configs) == 22
    # HEAD's file, but MB-07's: RUNS.md lists its primary golden's CONFIG DRIFT and saved the config at be2b2cd7
    # (DeepEP, TE's cross entropy); MB-48's drift is its _2nd golden's, not the primary's
    assert {c.id: c.recorded for c in cases if c.recorded} == {"MB-07": "be2b2cd7"}
    assert {c.config.name.replace(".at_be2b2cd7", "") for c in cases} == {p.name for p in configs}
    for case in cases:
        row = summary[case.id]
        assert case.stem.endswith("__" + row[1])
        assert case.world == (int(row[4]) if row[4] != "?" else pm.RELEASE_WORLD[row[1]])
        assert case.world_assumed == (row[4] == "?")
        # RUNS.md's 'peak alloc max GiB' is the primary golden's max, rounded to 2 decimals
        assert abs(case.measured_bytes() / 2**30 - float(row[7])) <= 0.005, case.id


def _sizes(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"\b(tp|pp|cp|ep|etp|dp)(\d+)", text)}


def test_parallel_sizes_as_runs_md_says():
    """Each answered case's configuration carries the tp, pp, cp, ep, etp and dp RUNS.md lists for it."""
    pm, summary = _module(), _summary()
    table = pm.rows()
    assert len(table) == 22
    for row in table:
        assert ("allocated_bytes" in row) != ("refused" in row), row["id"]
        if "refused" in row:
            assert "\n" not in row["refused"] and "Traceback" not in row["refused"]
            continue
        want = _sizes(summary[row["id"]][3])
        got = {k: row["config"].get(k, 1) for k in want}  # ep, etp listed only with experts
        assert got == want, row["id"]


def test_sentencepiece_cases_get_their_tokenizer_size():
    """The two release cases name Nemotron-4's SentencePiece model (their --tokenizer-model), whose 256,000 pieces
    the table supplies as --vocab-size (source: the verbatim files; the size cited in TOKENIZER_PIECES); the GPT-2
    cases name none. Exact."""
    pm = _module()
    got = {c.id: pm.tokenizer_pieces(c.config) for c in pm.cases()}
    assert {k for k, v in got.items() if v} == {"MB-07", "MB-12"}
    assert got["MB-12"] == got["MB-07"] == 256_000


def test_lts_a100_deterministic_golden_read_with_unfused_attention():
    """LTS_A100_DETERMINISTIC goes to the cases whose golden ran in the LTS container on an A100 with
    NVTE_ALLOW_NONDETERMINISTIC_ALGO 0 and whose file names no attention backend: MB-29 alone (MB-32's names unfused;
    every other primary golden is a dev one). Source: RUNS.md's primary goldens and the verbatim files. Exact."""
    pm = _module()
    got = {c.id: pm.container_arguments(c) for c in pm.cases()}
    assert {k for k, v in got.items() if v} == {"MB-29"}
    assert got["MB-29"] == pm.LTS_A100_DETERMINISTIC == ["--no-flash-attn"]
