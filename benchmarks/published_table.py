"""What the tables of published measured runs share (published_megatron.py, published_titan.py): the summary line,
the command's flags, and the files --out writes with the commit they were computed at."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]


def summary(table: list[dict]) -> str:
    """'N runs: A answered, R refused; |error| median, max, within 10 %' of a table's rows (error: a fraction)."""
    done = sorted(abs(r["error"]) for r in table if "error" in r)
    line = f"{len(table)} run{'s' * (len(table) != 1)}: {len(done)} answered, {len(table) - len(done)} refused"
    if done:
        line += (
            f"; |error| median {100 * done[len(done) // 2]:.1f} %, max {100 * done[-1]:.1f} %, "
            f"{sum(e <= 0.10 for e in done)} within 10 %"
        )
    return line


def arguments(doc: str) -> argparse.Namespace:
    """--json (one object per run), --out PREFIX (the table as data) and --case ID (those runs alone)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per run (with the components)")
    parser.add_argument("--out", metavar="PREFIX", help="write PREFIX.tsv and PREFIX.jsonl (with the commit)")
    parser.add_argument("--case", metavar="ID", action="append", help="only the run ID (e.g. MB-39, TT-11); repeatable")
    args = parser.parse_args()
    if args.case and args.out:
        parser.error("--out writes the whole table: give it without --case")
    return args


def with_error(row: dict, mine: str) -> dict:
    """row with its error where mem4d answered: its `mine` bytes over the measured bytes, less one (a fraction)."""
    return row | ({"error": row[mine] / row["measured_bytes"] - 1} if mine in row else {})


def tsv(head: str, table: list[dict], own: Callable[[dict], list[str]], mine: str, digits: int) -> str:
    """The table as tab-separated lines: each row's own cells (`head` names them), then mem4d's `mine` bytes in GiB
    (to `digits` places) and its error in percent ('-' each where it refused), then the refusal."""
    lines = [f"{head}\tmem4d_GiB\terror_pct\trefused"]
    for r in table:
        answer = [f"{r[mine] / 2**30:.{digits}f}", f"{100 * r['error']:+.1f}"] if mine in r else ["-", "-"]
        lines.append("\t".join(map(str, [*own(r), *answer, r.get("refused", "")])))
    return "\n".join(lines) + "\n"


def absent(name: str, measured: Path) -> bool:
    """Whether the measured runs (RUNS.md under measured) are missing, said then in one line on stderr."""
    if (measured / "RUNS.md").exists():
        return False
    print(f"{name}: {measured} is absent (the reference data beside the clone)", file=sys.stderr)
    return True


def chosen(items: list, ids: list[str] | None, known: list[str]) -> list:
    """The items whose id is in `ids` (all without it); an id that names no run is a usage error (exit 2)."""
    if not ids:
        return items
    unknown = sorted(set(ids) - set(known))
    if unknown:
        print(f"--case: no run {', '.join(unknown)}; the runs are {', '.join(known)}", file=sys.stderr)
        raise SystemExit(2)
    return [item for item, name in zip(items, known) if name in ids]


def report(table: list[dict], tsv: Callable[[list[dict]], str], out: str | None, as_json: bool) -> None:
    """Write PREFIX.tsv (with the summary and commit) and PREFIX.jsonl where `out` is given; print the table."""
    if out:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout.strip()
        Path(f"{out}.tsv").write_text(tsv(table) + f"# {summary(table)}; mem4d at {commit}\n")
        Path(f"{out}.jsonl").write_text("".join(json.dumps({**r, "commit": commit}) + "\n" for r in table))
    print("\n".join(json.dumps(r) for r in table) if as_json else tsv(table) + summary(table))
