"""`mem4d sweep` engine: a TOML grid of configurations, expanded, validated, run one by one, appended to JSONL (resumable)."""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from symbolic.config.dtypes import FLOATS
from symbolic.config.errors import ConfigError
from symbolic.config.shapes import DEFAULT_MODEL, resolve_model
from symbolic.config.training import RECOMPUTE, Training

from ..spec import JaxOptions, StepSpec

# grid key (the CLI flag's name) -> (type, default); defaults are `mem4d compile`'s
KEYS: dict[str, tuple[type, object]] = {
    "model": (str, DEFAULT_MODEL), "dp": (int, 1), "tp": (int, 1), "pp": (int, 1), "cp": (int, 1), "vpp": (int, 1),
    "seq": (int, 4096), "mbs": (int, 1), "gbs": (int, None), "remat": (str, "none"), "zero1": (bool, False),
    "sp": (bool, True), "flash_attn": (bool, True), "param_dtype": (str, "float32"), "compute_dtype": (str, "bfloat16"),
}
CHOICES = {"remat": RECOMPUTE, "param_dtype": FLOATS, "compute_dtype": FLOATS}
TABLES = ("base", "grid", "case")

Config = dict  # one resolved point of the grid: every key of KEYS


def _check_value(where: str, key: str, value) -> None:
    """One key/value of a grid file: known key, right type, allowed choice; else a one-line ConfigError."""
    if key not in KEYS:
        raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")
    kind = KEYS[key][0]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise ConfigError(f"{where}: {key} must be a positive integer, got {value!r}")
    if kind is not int and not isinstance(value, kind):
        raise ConfigError(f"{where}: {key} must be a {kind.__name__}, got {value!r}")
    if key in CHOICES and value not in CHOICES[key]:
        raise ConfigError(f"{where}: {key} must be one of {', '.join(CHOICES[key])}, got {value!r}")
    if key == "model":
        try:
            resolve_model(value)
        except ConfigError as err:
            raise ConfigError(f"{where}: {err}") from None


def _table(path: str, doc: dict, name: str) -> dict:
    value = doc.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    return value


def parse_grid(path: str | Path) -> list[Config]:
    """Read GRID.toml: [base] defaults, [grid] lists (cartesian product, file order), [[case]] explicit configs."""
    path = str(path)
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"grid file {path} not found") from None
    except OSError as err:
        raise ConfigError(f"cannot read grid file {path}: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: malformed TOML: {err}") from None
    for name in doc:
        if name not in TABLES:
            raise ConfigError(f"{path}: unknown top-level key {name!r} (known: [base], [grid], [[case]])")
    base = {key: default for key, (_, default) in KEYS.items()}
    for key, value in _table(path, doc, "base").items():
        _check_value(f"{path} [base]", key, value)
        base[key] = value
    grid = _table(path, doc, "grid")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{path} [grid]: {key} must be a non-empty list, got {values!r}")
        for value in values:
            _check_value(f"{path} [grid]", key, value)
    cases = doc.get("case", [])
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise ConfigError(f"{path}: case must be an array of tables ([[case]])")
    configs = [{**base, **dict(zip(grid, combo))} for combo in itertools.product(*grid.values())] if grid else []
    for i, case in enumerate(cases, 1):
        for key, value in case.items():
            _check_value(f"{path} [[case]] #{i}", key, value)
        configs.append({**base, **case})
    if not grid and not cases:
        configs.append(base)
    return unique(configs)


def config_key(cfg: Config) -> str:
    """Canonical hash of a config: sha256 of its sorted-key JSON (every key present, defaults filled in)."""
    full = {key: cfg.get(key, default) for key, (_, default) in KEYS.items()}
    return hashlib.sha256(json.dumps(full, sort_keys=True).encode()).hexdigest()[:16]


def unique(configs: Iterable[Config]) -> list[Config]:
    """Drop repeated configs (same key), keeping the first; order otherwise unchanged."""
    seen: dict[str, Config] = {}
    for cfg in configs:
        seen.setdefault(config_key(cfg), cfg)
    return list(seen.values())


def label(cfg: Config) -> str:
    """Short human name: model d t p c s b gbs remat [zero1]."""
    gbs = "" if cfg["gbs"] is None else f" gbs{cfg['gbs']}"
    extras = "".join(f" {k}" for k in ("zero1",) if cfg[k]) + "".join(f" no-{k}" for k in ("sp", "flash_attn") if not cfg[k])
    return (f"{cfg['model']} d{cfg['dp']} t{cfg['tp']} p{cfg['pp']} c{cfg['cp']} s{cfg['seq']} b{cfg['mbs']}{gbs} "
            f"{cfg['remat']}{extras}")


def to_spec(cfg: Config) -> StepSpec:
    """The config as jaxcheck's StepSpec, checked (Training + StepSpec rules); invalid combinations raise ConfigError."""
    shape = resolve_model(cfg["model"])
    train = Training(d=cfg["dp"], t=cfg["tp"], p=cfg["pp"], c=cfg["cp"], vpp=cfg["vpp"], s=cfg["seq"], b=cfg["mbs"],
                     gbs=cfg["gbs"], sp=cfg["sp"], zero=int(cfg["zero1"]), recompute=cfg["remat"],
                     flash_attn=cfg["flash_attn"])
    return StepSpec(shape, train, JaxOptions(param_dtype=cfg["param_dtype"], compute_dtype=cfg["compute_dtype"])).check()


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
    record = {"key": job.key, "params": job.cfg, "label": label(job.cfg), "status": "ok", "error": None, "result": None}
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


def pending(all_jobs: list[Job], done: list[dict], retry_failed: bool = False) -> list[Job]:
    """Jobs whose key is not in the results file yet (with retry_failed, also those whose last record failed)."""
    last = {r["key"]: r["status"] for r in done}
    return [j for j in all_jobs if j.key not in last or (retry_failed and last[j.key] == "failed")]


def run_all(todo: list[Job], fd: int, run: RunFn, devices: int,
            on_done: Callable[[dict], None] = lambda record: None, extra: dict | None = None) -> int:
    """Run jobs in order, appending each record (plus the extra fields) as soon as it is finished; returns the count."""
    written = 0
    for job in todo:
        record = run_job(job, run, devices) | (extra or {})
        append_result(fd, record)
        written += 1
        on_done(record)
    return written
