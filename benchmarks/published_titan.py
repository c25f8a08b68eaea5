"""mem4d beside the 8 torchtitan rows of ../shared/data/measured/RUNS.md (section B: torchtitan's Llama 3.1 H100
benchmark, pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md): each row written as the torchtitan job
TOML it states (records/published/torchtitan/<id>.toml, what RUNS.md leaves unstated filled in as it says and marked
in the file), read by `mem4d estimate --torchtitan FILE --gpus N --json`, the reserved peak of the most loaded GPU
beside the row's Memory (torch.cuda.memory_stats()["reserved_bytes.all.peak"], the maximum over GPUs), or mem4d's
one-line refusal.

    python benchmarks/published_titan.py [--json] [--out records/published/torchtitan]

(--out also rewrites the job files records/published/torchtitan/<id>.toml.)

No term of mem4d is set from these figures: they are the references the issue's 10 % is judged against.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # published_table.py beside it, also when a test imports it
import published_table  # noqa: E402  (benchmarks/published_table.py)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MEASURED = ROOT.parent / "shared" / "data" / "measured"
JOBS = ROOT / "records" / "published" / "torchtitan"
GiB = 2**30
# RUNS.md section B, "Notes/assumptions": float8 is torchao's tensorwise Float8Linear; the 405B train_config's
# enable_fsdp_float8_all_gather / precompute_float8_dynamic_scale_for_fsdp (true) assumed for every row; torchtitan
# 9dec370 compiles the TransformerBlocks only (apply_compile), so compile.components = ["model"].
ASSUMED = (
    "float8 tensorwise with enable_fsdp_float8_all_gather and precompute_float8_dynamic_scale_for_fsdp (the "
    "405B train_config's, assumed for every row by RUNS.md); compile.components = [\"model\"] (9dec370 compiles "
    "the blocks only)"
)


@dataclass(frozen=True)
class Row:
    """One torchtitan row of RUNS.md: its id and source line, flavour, GPUs, parallel degrees, local batch, sequence
    (and whether RUNS.md assumed it), checkpointing mode, compile, Float8, the pipeline microbatch, async TP, and the
    published Memory (GiB, reserved, the maximum over GPUs)."""

    id: str
    line: str
    flavor: str
    gpus: int
    degrees: dict
    local_batch: int
    seq: int
    seq_assumed: bool
    ac: str
    compile: bool
    float8: bool
    microbatch: int
    async_tp: bool
    measured_gib: float

    def job(self) -> str:
        """The torchtitan 0.2.2 job TOML this row states."""
        d = self.degrees
        lines = [
            f"# {self.id} ({self.line}) of ../shared/data/measured/RUNS.md, written by benchmarks/published_titan.py",
            f"# assumed: {ASSUMED}"
            + ("; seq_len 8192 (RUNS.md: the 9dec370 train_configs')" if self.seq_assumed else ""),
            "[model]",
            'name = "llama3"',
            f'flavor = "{self.flavor}"',
            'converters = ["quantize.linear.float8"]' if self.float8 else "converters = []",
            "[training]",
            f"local_batch_size = {self.local_batch}",
            f"seq_len = {self.seq}",
            "[parallelism]",
            f"data_parallel_shard_degree = {d.get('FSDP', 1)}",
            f"tensor_parallel_degree = {d.get('TP', 1)}",
            f"pipeline_parallel_degree = {d.get('PP', 1)}",
            f"context_parallel_degree = {d.get('CP', 1)}",
        ]
        if d.get("PP", 1) > 1:
            lines += ['pipeline_parallel_schedule = "1F1B"', f"pipeline_parallel_microbatch_size = {self.microbatch}"]
        if self.async_tp:
            lines.append("enable_async_tensor_parallel = true")
        lines += [
            "[activation_checkpoint]",
            f'mode = "{self.ac}"',
            "[compile]",
            f"enable = {str(self.compile).lower()}",
            'components = ["model"]',
        ]
        if self.float8:
            lines += [
                "[quantize.linear.float8]",
                'recipe_name = "tensorwise"',
                "enable_fsdp_float8_all_gather = true",
                "precompute_float8_dynamic_scale_for_fsdp = true",
            ]
        return "\n".join(lines) + "\n"


def _row(cells: list[str], other: str) -> Row:
    degrees = {k: int(v) for k, v in re.findall(r"\b(FSDP|TP|PP|CP) (\d+)", cells[4])}
    local = int(cells[5].split("/")[0])
    micro = re.search(r"microbatch (\d+)", other)
    return Row(
        cells[0],
        cells[1],
        cells[2],
        int(cells[3]),
        degrees,
        local,
        int(cells[6].split()[0]),
        "assumed" in cells[6],
        cells[7],
        cells[8] == "yes",
        cells[9] == "yes",
        int(micro.group(1)) if micro else local,
        "AsyncTP" in other,
        float(cells[11]),
    )


def rows_of(measured: Path = MEASURED) -> list[Row]:
    """RUNS.md's torchtitan table, one Row per TT line ('same' in its other column: the line above's)."""
    out, other = [], ""
    for line in (measured / "RUNS.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if re.fullmatch(r"TT-\d+", cells[0]) and len(cells) >= 12:
            other = other if cells[10] == "same" else cells[10]
            out.append(_row(cells, other))
    return out


def estimate(row: Row, path: Path) -> dict:
    """mem4d's answer for the row's job file: {'reserved_bytes', 'allocated_bytes', 'stage', ...} or {'refused'}."""
    from symbolic.cli.entry import main

    argv = ["estimate", "--torchtitan", str(path), "--gpus", str(row.gpus), "--json"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    if rc != 0:
        text = err.getvalue().strip()
        return {"refused": (text.splitlines()[-1] if text else f"exit {rc}").replace(str(path.parent) + "/", "")}
    report = json.loads(out.getvalue())
    stage = next(s for s in report["stages"] if s["stage"] == report["most_loaded_stage"])
    return {
        **{k: report["memory"][k] for k in ("allocated_bytes", "reserved_bytes")},
        "stage": report["most_loaded_stage"],
        "config": report["config"],
        "components": {k: v for k, v in stage["bytes"].items() if v},
    }


def rows(measured: Path = MEASURED, jobs: Path = JOBS, ids: list[str] | None = None) -> list[dict]:
    """Every row (those of `ids` alone where given): its job file written into `jobs`, the measured bytes, and mem4d's
    reserved figure with its error or refusal."""
    jobs.mkdir(parents=True, exist_ok=True)
    out = []
    every = rows_of(measured)
    for row in published_table.chosen(every, ids, [r.id for r in every]):
        path = jobs / f"{row.id}.toml"
        path.write_text(row.job())
        entry = {
            **asdict(row),
            "job": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
            "measured_bytes": round(row.measured_gib * GiB),
            **estimate(row, path),
        }
        out.append(published_table.with_error(entry, "reserved_bytes"))
    return out


def tsv(table: list[dict]) -> str:
    def own(r: dict) -> list[str]:
        par = " ".join(f"{k.lower()}{v}" for k, v in r["degrees"].items())
        return [r["id"], r["line"], r["flavor"], str(r["gpus"]), par, str(r["seq"]), f"{r['measured_gib']:.1f}"]

    head = "id\tsource\tmodel\tgpus\tparallelism\tseq\tmeasured_GiB"
    return published_table.tsv(head, table, own, "reserved_bytes", 2)


def main() -> int:
    args = published_table.arguments(__doc__)
    if published_table.absent("published_titan", MEASURED):
        return 2
    with tempfile.TemporaryDirectory() as scratch:  # the committed job files are rewritten only with --out
        table = rows(jobs=JOBS if args.out else Path(scratch), ids=args.case)
    published_table.report(table, tsv, args.out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
