"""`mem4d sweep` engine: run a grid's configs one by one, each appended to a JSONL file at once (resumable)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import resolve_model

from ..spec import StepSpec
from .grid import Config, config_key, label, to_spec


def one_line(err: BaseException) -> str:
    """An exception as one line: its type and the first non-empty line of its message."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    return f"{type(err).__name__}: {lines[0] if lines else ''}".rstrip(": ")


# ---- JSONL results ---------------------------------------------------------------------------------------------------


def read_results(path: str | Path) -> list[dict]:
    """Every complete record of a results file ([] if absent); only the last line may be torn (a kill mid-write).

    Any other line that is not a sweep record means -o names some other file: a one-line ConfigError, nothing written."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read results file {path}: {getattr(err, 'strerror', None) or err}") from None
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if isinstance(record, dict) and "key" in record and "status" in record:
            out.append(record)
        elif i < len(lines) or text.endswith("\n"):
            raise ConfigError(f"{path} line {i} is not a mem4d sweep record: choose another -o (a .jsonl of results)")
    return out


def open_results(path: str | Path) -> int:
    """Open for appending; a torn last line (killed mid-write) is cut off so the next record starts on its own line."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as err:
        raise ConfigError(f"cannot write results file {path}: {err.strerror}") from None
    size = os.fstat(fd).st_size
    if size:
        data = path.read_bytes()
        if not data.endswith(b"\n"):
            os.ftruncate(fd, data.rfind(b"\n") + 1)
    return fd


def append_result(fd: int, record: dict) -> None:
    """One JSON line in one write, then fsync: a finished result survives Ctrl-C, kill or power loss."""
    os.write(fd, (json.dumps(record, sort_keys=True) + "\n").encode())
    os.fsync(fd)


# ---- the runner ------------------------------------------------------------------------------------------------------

RunFn = Callable[[StepSpec], dict]  # compiles one spec and returns verify()'s dict


@dataclass
class Job:
    """One config to run: its key, its grid values, and its StepSpec (None with the reason when the combination is invalid)."""

    key: str
    cfg: Config
    spec: StepSpec | None
    reason: str | None = None


def jobs(configs: list[Config]) -> list[Job]:
    """Check every config up front (no jax needed): invalid combinations become skipped jobs with their reason."""
    out = []
    for cfg in configs:
        try:
            out.append(Job(config_key(cfg), cfg, to_spec(cfg)))
        except ConfigError as err:
            out.append(Job(config_key(cfg), cfg, None, str(err)))
    return out


def max_world(todo: list[Job]) -> int:
    """Devices the largest valid mesh needs: d * t * p * c."""
    return max((j.spec.train.world for j in todo if j.spec is not None), default=1)


def run_job(job: Job, run: RunFn, devices: int) -> dict:
    """Run one job: ok with verify's result, skipped (invalid / too few devices) or failed with a one-line error."""
    record = {
        "key": job.key,
        "config": job.cfg,
        "param_count": resolve_model(job.cfg["model"]).param_count,
        "label": label(job.cfg),
        "status": "ok",
        "error": None,
        "result": None,
    }
    start = time.perf_counter()
    if job.spec is None:
        record.update(status="skipped", error=job.reason)
    elif job.spec.train.world > devices:
        record.update(status="skipped", error=f"needs {job.spec.train.world} devices, the backend has {devices}")
    else:
        try:
            record["result"] = run(job.spec)
        except ConfigError as err:
            record.update(status="skipped", error=str(err))
        except Exception as err:  # a compile failure is recorded and the sweep goes on
            record.update(status="failed", error=one_line(err))
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


def shard(configs: list, spec: str | None) -> list:
    """Every N-th configuration from the I-th (spec "I/N", 0 <= I < N): the share of one of N machines; all when None."""
    if spec is None:
        return configs
    index, _, count = spec.partition("/")
    if not (index.strip().isdigit() and count.strip().isdigit()) or not 0 <= int(index) < int(count):
        raise ConfigError(f"--shard must be I/N with 0 <= I < N (e.g. 0/4), got {spec!r}")
    return configs[int(index) :: int(count)]


def check_target(done: list[dict], target: str, path) -> None:
    """A results file holds one target's records: resuming it for another target is a one-line ConfigError."""
    other = sorted({r.get("target") for r in done if r.get("target") not in (None, target)})
    if other:
        raise ConfigError(f"{path} holds results computed for target {other[0]}, not {target}: choose another -o")


def pending(all_jobs: list[Job], done: list[dict], retry_failed: bool = False) -> list[Job]:
    """Jobs whose key is not in the results file yet (with retry_failed, also those whose last record failed)."""
    last = {r["key"]: r["status"] for r in done}
    return [j for j in all_jobs if j.key not in last or (retry_failed and last[j.key] == "failed")]


def run_all(
    todo: list[Job],
    fd: int,
    run: RunFn,
    devices: int,
    on_done: Callable[[dict], None] = lambda record: None,
    extra: dict | None = None,
) -> int:
    """Run jobs in order, appending each record (plus the extra fields) as soon as it is finished; returns the count."""
    written = 0
    for job in todo:
        record = run_job(job, run, devices) | (extra or {})
        append_result(fd, record)
        written += 1
        on_done(record)
    return written
