"""A sweep's grid: TOML [base]/[grid]/[[case]] expanded into configs keyed by the CLI's flag names, each checked."""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from pathlib import Path
from typing import Iterable

from symbolic.config.dtypes import FLOATS
from symbolic.recipes.jax.step import COMPUTE_DTYPE as JAX_COMPUTE_DTYPE, PARAM_DTYPE as JAX_PARAM_DTYPE
from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import resolve_model
from symbolic.config.shapes import DEFAULT_MODEL
from symbolic.config.training import MOE_FIELDS, training_from_json
from symbolic.config.parallel import ZERO_STAGES
from symbolic.config.training_checks import RECOMPUTE, SCHEDULES

from ..spec import DEFAULT_TRAINING, JaxOptions, StepSpec

# a grid point: the CLI's flag names with `mem4d compile`'s defaults (the model, the Training, the dtypes; stage_layers
# last: uneven stages, one program per stage kind, jaxcheck.stages)
DEFAULTS: dict = {
    "model": DEFAULT_MODEL,
    **{k: v for k, v in DEFAULT_TRAINING.flags(widths=False).items() if k != "stage_layers"},
    "schedule": DEFAULT_TRAINING.schedule,
    "param_dtype": JAX_PARAM_DTYPE,
    "compute_dtype": JAX_COMPUTE_DTYPE,
    "stage_layers": None,
}
# gbs, etp: None by default (one full pipeline; etp = tp); moe_capacity: a number; stage_layers: a list of counts
TYPES = {
    key: int
    if key in ("gbs", "etp")
    else (int, float)
    if key == "moe_capacity"
    else list
    if key == "stage_layers"
    else type(value)
    for key, value in DEFAULTS.items()
}
MOE_DEFAULTS = {key: DEFAULTS[key] for key in MOE_FIELDS}  # keys a config of a dense model leaves at their default
# keys that enter a config's hash only where they differ from their defaults (added after configs were recorded;
# the records of GPipe steps compiled before 1F1B existed carry schedule "gpipe")
OPTIONAL = {**MOE_DEFAULTS, "schedule": DEFAULTS["schedule"], "stage_layers": None}
CHOICES = {
    "recompute": RECOMPUTE,
    "zero": ZERO_STAGES,
    "param_dtype": FLOATS,
    "compute_dtype": FLOATS,
    "schedule": SCHEDULES,
}
TABLES = ("base", "grid", "case")

Config = dict  # one resolved point of the grid: every key of DEFAULTS


def _check_value(where: str, key: str, value) -> None:
    """One key/value of a grid file: known key, right type, allowed choice; else a one-line ConfigError."""
    if key not in DEFAULTS:
        raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(DEFAULTS)})")
    kind = TYPES[key]
    typed = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
    if key == "moe_capacity" and typed and not value > 0:
        raise ConfigError(f"{where}: moe_capacity must be a number above 0, got {value!r}")
    if key == "stage_layers" and not (
        typed and value and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in value)
    ):
        raise ConfigError(
            f"{where}: stage_layers must be a list of positive layer counts, one per pipeline rank, got {value!r}"
        )
    if key in CHOICES:
        if not typed or value not in CHOICES[key]:
            raise ConfigError(f"{where}: {key} must be one of {', '.join(map(str, CHOICES[key]))}, got {value!r}")
    elif kind is int and (not typed or value <= 0):
        raise ConfigError(f"{where}: {key} must be a positive integer, got {value!r}")
    elif not typed:
        raise ConfigError(f"{where}: {key} must be a {getattr(kind, '__name__', 'number')}, got {value!r}")
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


def _unreadable(path: str, err: Exception) -> str:
    """Why the grid file cannot be read, in one line: absent, unreadable, not UTF-8, or not TOML."""
    if isinstance(err, FileNotFoundError):
        return f"grid file {path} not found"
    if isinstance(err, OSError):
        return f"cannot read grid file {path}: {err.strerror}"
    if isinstance(err, UnicodeDecodeError):
        return f"{path}: not UTF-8 text (byte {err.start}): a grid is a TOML file"
    return f"{path}: malformed TOML: {err}"


def parse_grid(path: str | Path) -> list[Config]:
    """Read GRID.toml: [base] defaults, [grid] lists (cartesian product, file order), [[case]] explicit configs."""
    path = str(path)
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(_unreadable(path, err)) from None
    for name in doc:
        if name not in TABLES:
            raise ConfigError(f"{path}: unknown top-level key {name!r} (known: [base], [grid], [[case]])")
    base = dict(DEFAULTS)
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
    if not configs:
        raise ConfigError(
            f"{path}: nothing to sweep: give a [grid] of lists or at least one [[case]] "
            "(one configuration is one [[case]])"
        )
    return unique(configs)


def config_key(cfg: Config) -> str:
    """Canonical hash of a config: sha256 of its sorted-key JSON (every key present, defaults filled in; the OPTIONAL
    keys only where they differ from their defaults, so the keys of configs recorded before they existed stand)."""
    full = {
        key: cfg.get(key, default)
        for key, default in DEFAULTS.items()
        if key not in OPTIONAL or cfg.get(key, default) != default
    }
    return hashlib.sha256(json.dumps(full, sort_keys=True).encode()).hexdigest()[:16]


def unique(configs: Iterable[Config]) -> list[Config]:
    """Drop repeated configs (same key), keeping the first; order otherwise unchanged."""
    seen: dict[str, Config] = {}
    for cfg in configs:
        seen.setdefault(config_key(cfg), cfg)
    return list(seen.values())


def label(cfg: Config) -> str:
    """Short human name: model d t p c s b [gbs] recompute [zeroN] [no-sp] [no-flash_attn]."""
    gbs = "" if cfg["gbs"] is None else f" gbs{cfg['gbs']}"
    extras = (f" zero{cfg['zero']}" if cfg["zero"] else "") + "".join(
        f" no-{k}" for k in ("sp", "flash_attn") if not cfg[k]
    )
    extras += " gpipe" if cfg.get("schedule", OPTIONAL["schedule"]) == "gpipe" else ""
    extras += f" layers{','.join(map(str, cfg['stage_layers']))}" if cfg.get("stage_layers") else ""
    experts = "".join(
        f" {name}{cfg[key]:g}"
        for key, name in (("ep", "e"), ("etp", "te"), ("moe_capacity", "C"))
        if cfg.get(key, MOE_DEFAULTS[key]) != MOE_DEFAULTS[key]
    )
    extras = experts + extras
    return (
        f"{cfg['model']} d{cfg['dp']} t{cfg['tp']} p{cfg['pp']} c{cfg['cp']} s{cfg['seq']} b{cfg['mbs']}{gbs} "
        f"{cfg['recompute']}{extras}"
    )


def to_spec(cfg: Config) -> StepSpec:
    """The config as jaxcheck's StepSpec, checked (Training + StepSpec rules); invalid combinations raise ConfigError."""
    opts = JaxOptions(param_dtype=cfg["param_dtype"], compute_dtype=cfg["compute_dtype"])
    return StepSpec(resolve_model(cfg["model"]), training_from_json(cfg), opts).check()
