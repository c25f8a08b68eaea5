"""XLA's own figure per phase: the bytes of temporaries live at each program point, rebuilt from a compile's
buffer-assignment and live-range dumps (XLA_FLAGS=--xla_dump_to, or compiler_options), and their peak in each window
between the step's top-level loops (forward pipeline, loss, backward pipeline)."""

from __future__ import annotations

import re
from pathlib import Path

DUMP_OPTIONS = {"xla_dump_hlo_as_text": True, "xla_dump_hlo_module_re": ".*train_step.*"}
_VALUE = re.compile(r"value: <\d+ ([\w.\-]+)(\{[\d,]*\})?(?: \(phi\))? @\d+> \(size=(\d+),offset=(\d+)\)")
_RANGE = re.compile(r"^\s*([\w.\-]+\{[\d,]*\}):(\d+)-(\d+)", re.M)


def _files(directory: Path) -> tuple[str, str, str]:
    """(optimized HLO, buffer assignment, live ranges) of the train step's module in a dump directory."""
    hlo = sorted(directory.glob("*train_step*_after_optimizations.txt"))
    if not hlo:
        raise FileNotFoundError(f"no optimized train_step module in {directory}")
    stem = str(hlo[-1])[: -len(".txt")]
    return (
        hlo[-1].read_text(),
        Path(stem + "-buffer-assignment.txt").read_text(),
        Path(stem + "-live-range.txt").read_text(),
    )


def _temp_values(assignment: str) -> tuple[int, dict[str, tuple[int, int]]]:
    """The temp allocation's size and its values: name -> (offset, end) in the heap."""
    parts = re.split(r"\nallocation (\d+): ", assignment)
    for i in range(1, len(parts), 2):
        head, body = parts[i + 1].split("\n", 1)[0], parts[i + 1]
        if "preallocated-temp" in head:
            values = {
                m.group(1) + (m.group(2) or "{}"): (int(m.group(4)), int(m.group(4)) + int(m.group(3)))
                for m in _VALUE.finditer(body)
            }
            return int(re.match(r"size (\d+)", head).group(1)), values
    return 0, {}


def _occupied(intervals: list[tuple[int, int]]) -> int:
    """Bytes covered by heap intervals (values sharing memory are counted once)."""
    total, start, end = 0, None, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += 0 if end is None else end - start
            start, end = a, b
        else:
            end = max(end, b)
    return total + (0 if end is None else end - start)


def live_bytes(hlo: str, assignment: str, ranges: str) -> tuple[list[int], list[int], int]:
    """Live temp bytes at every program point, the positions of the entry computation's while loops, the heap size."""
    size, values = _temp_values(assignment)
    section = ranges.split("BufferLiveRange:")[1].split("Live ranges at")[0]
    spans = [
        (int(m.group(2)), int(m.group(3)), values[m.group(1)]) for m in _RANGE.finditer(section) if m.group(1) in values
    ]
    points = max((e for _, e, _ in spans), default=0) + 1
    at: list[list[tuple[int, int]]] = [[] for _ in range(points)]
    for start, end, interval in spans:
        for t in range(start, end + 1):
            at[t].append(interval)
    sequence = ranges.split("InstructionSequence:")[1].split("BufferLiveRange:")[0]
    position = {name: int(i) for i, name in re.findall(r"^\s+(\d+):(\S+)$", sequence, re.M)}
    entry = hlo[hlo.index("\nENTRY ") :]
    entry = entry[: entry.index("\n}\n")]
    loops = sorted(
        position[m.group(1)]
        for m in re.finditer(r"^\s*%([\w.\-]+) = .* while\(", entry, re.M)
        if m.group(1) in position
    )
    return [_occupied(x) for x in at], loops, size


def phase_peaks(directory: str | Path, update_loop: bool = False, ticks: bool = False) -> dict:
    """XLA's heap size, its largest live set, and the peak of each window between the top-level loops, named as the
    profile's phases they hold: with three loops forward | relayout + loss | backward | update; with two (one micro
    batch or one iteration: XLA removes trip-count-1 loops) forward | relayout + loss + backward | update; `ticks`
    (1F1B: one loop of ticks) forward + loss + backward | update.
    update_loop: the last loop is the update's (ZeRO-2 gathers the new weights one layer at a time), in "update"."""
    live, loops, size = live_bytes(*_files(Path(directory)))
    bounds = [0] + loops + [len(live) - 1]
    # a window runs from just after one loop to the end of the next: at a while instruction itself the loop's state
    # (e.g. the backward's residual stacks) is still live, so that point belongs to the loop's window
    peaks = [max(live[lo + (i > 0) : hi + 1]) for i, (lo, hi) in enumerate(zip(bounds, bounds[1:]))]
    if update_loop and len(peaks) > 1:
        peaks = peaks[:-2] + [max(peaks[-2:])]
    names = (
        {2: ["forward+loss+backward", "update"]}
        if ticks
        else {4: ["forward", "relayout+loss", "backward", "update"], 3: ["forward", "relayout+loss+backward", "update"]}
    ).get(len(peaks), [f"window {i}" for i in range(len(peaks))])
    return {"temp_bytes": size, "max_live_bytes": max(live, default=0), "windows": dict(zip(names, peaks))}
