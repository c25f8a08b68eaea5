"""The index of the evaluation records (records/README.md), made from the records themselves, and their figures on
demand (none is committed):

    python -m jaxcheck.crosscheck.records                    # print the README
    python -m jaxcheck.crosscheck.records --write            # write records/README.md (tests/test_records.py
                                                             # checks it equals the printed text)
    python -m jaxcheck.crosscheck.records --figures DIR [NAME ...]   # each record's scatter and component PNGs

A row per `mem4d sweep` record file (JSONL) under records/: its grid (the summary's, or the grid named like it), the
target it was compiled for, the commits whose `jax` profile scored it (each record's "code"), configurations
compiled of those in the file, and |relative error| of the total, median and max, as `mem4d sweep` summarises them
(jaxcheck.crosscheck.report.summarize). Plain Python over JSON: no jax."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .report import latest, plot, summarize

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "records"
HEAD = """# Evaluation records

Every `mem4d sweep` evaluation of the `jax` profile against XLA, kept as it was written (docs/accuracy.md says what
each one showed and why it was run). A record file is JSON lines, one compiled configuration each, with the commit
whose profile scored it (`code`); `NAME.summary.json` beside it is what the sweep printed. The grids they ran are in
[../grids/](../grids/) (derive-*: the grids the profile's rows were read from; holdout-*: chosen before, never tuned
on). `earlier/` holds evaluations a later one of the same grid and target superseded (named first, second, ...);
`golden/` the outputs `benchmarks/golden.py check` compares byte for byte. Figures are not committed: `python -m
jaxcheck.crosscheck.records --figures DIR` draws them. This file is generated: `python -m jaxcheck.crosscheck.records
--write` (tests/test_records.py checks it is current).

| record | grid | target | profile commit | compiled | median \\|error\\| | max \\|error\\| |
|---|---|---|---|---:|---:|---:|
"""


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def is_sweep(records: list[dict]) -> bool:
    """Whether a JSONL file holds `mem4d sweep` records (key, status, result), not another script's rows."""
    return bool(records) and all({"key", "status", "result"} <= r.keys() for r in records)


def _grid(path: Path, target: str) -> str:
    """The grid a record file ran: its summary's, else grids/<the file's name less its target>.toml where it exists."""
    summary = path.with_name(path.stem + ".summary.json")
    if summary.exists():
        return json.loads(summary.read_text()).get("grid") or "-"
    guess = (
        ROOT / "grids" / (path.stem.removesuffix(f"-{target}").removesuffix("-first").removesuffix("-second") + ".toml")
    )
    return guess.relative_to(ROOT).as_posix() if guess.exists() else "-"


def _target(record: dict) -> str:
    """The target a record was compiled for (a name, or the target's description in newer records; cpu before)."""
    target = record.get("target") or ((record.get("result") or {}).get("target")) or "cpu"
    return target.get("name", "cpu") if isinstance(target, dict) else str(target)


def row(path: Path, records: list[dict]) -> str:
    """One README row: record, grid, target, profile commits, compiled of all, median and max |error of the total|."""
    summary = summarize(records)
    targets = sorted({_target(r) for r in latest(records)})
    target = ", ".join(targets)
    stats = summary["rel_error_total"]
    pct = lambda x: "-" if x is None else f"{100 * x:.2f} %"
    name = path.relative_to(RECORDS).as_posix()
    return (
        f"| [{name}]({name}) | {_grid(path, targets[0])} | {target} | {', '.join(summary['code']) or '-'} | "
        f"{summary['ok']} of {summary['count']} | {pct(stats.get('median_abs'))} | {pct(stats.get('max_abs'))} |"
    )


def files() -> list[tuple[Path, list[dict]]]:
    """Every record file under records/ with its records, top level first, then earlier/."""
    paths = sorted(RECORDS.glob("*.jsonl")) + sorted(RECORDS.glob("*/*.jsonl"))
    return [(path, _lines(path)) for path in paths]


def readme() -> str:
    """records/README.md: the head and a row per sweep record file, then the other JSONL files by name."""
    both = files()
    rows = [row(path, records) for path, records in both if is_sweep(records)]
    other = [path for path, records in both if not is_sweep(records)]
    tail = "".join(
        f"- [{p.relative_to(RECORDS).as_posix()}]({p.relative_to(RECORDS).as_posix()}): "
        f"{len(_lines(p))} rows, not sweep records (see the script named in docs/benchmarks.md)\n"
        for p in other
    )
    return HEAD + "\n".join(rows) + "\n" + ("\nOther records:\n\n" + tail if tail else "")


def figures(directory: Path, names: list[str]) -> list[Path]:
    """The scatter and component figures of each record file named (all where none is), written into directory."""
    directory.mkdir(parents=True, exist_ok=True)
    made = []
    for path, records in files():
        if is_sweep(records) and (not names or path.stem in names):
            made += plot(records, directory, path.stem) if any(r["status"] == "ok" for r in records) else []
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxcheck.crosscheck.records", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write records/README.md")
    parser.add_argument("--figures", metavar="DIR", help="draw each record file's figures into DIR")
    parser.add_argument("names", nargs="*", metavar="NAME", help="with --figures: only these record files (stems)")
    args = parser.parse_args(argv)
    if args.figures:
        made = figures(Path(args.figures), args.names)
        print(f"wrote {len(made)} figures to {args.figures}")
    elif args.write:
        (RECORDS / "README.md").write_text(readme())
        print(f"wrote {RECORDS / 'README.md'}")
    else:
        sys.stdout.write(readme())
    return 0


if __name__ == "__main__":
    sys.exit(main())
