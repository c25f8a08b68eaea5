"""What plan ranks by: the step-time model's predicted tokens/s/GPU on a system (symbolic.time, the default), or
the alpha-beta proxy (`--rank-by proxy`, plan.proxy); either way the proxy's terms stay as columns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config.parallel import Parallel
from ..config.training import Training
from ..config.training_checks import RECOMPUTE
from ..time.evaluate import components, hardware_values, precision_of, refusal
from ..time.choices import Choices
from ..time.systems import System
from .proxy import Hardware
from .proxy import terms as proxy_terms

BLOCK = 2**14  # rows whose step time is computed at once


@dataclass(frozen=True)
class StepTime:
    """Rank by the step-time model's tokens/s/GPU on `system` (the proxy's Hardware still gives its columns)."""

    system: System
    hw: Hardware = Hardware()


def terms(cluster, grid: dict, hw, policies: tuple = ()) -> dict:
    """The proxy's terms of every row; with a StepTime ranker, "score" is the predicted tokens/s/GPU instead."""
    if not isinstance(hw, StepTime):
        return proxy_terms(cluster, grid, hw, policies)
    out = proxy_terms(cluster, grid, hw.hw, policies)
    out["score"] = tokens_per_s(cluster, grid, hw.system, policies)
    return out


def score(cluster, grid: dict, hw) -> np.ndarray:
    """Only the "score" of terms (plan.best's bounds need no other column)."""
    if isinstance(hw, StepTime):
        return tokens_per_s(cluster, grid, hw.system)
    return proxy_terms(cluster, grid, hw)["score"]


def _choices(cluster, grid: dict, policies: tuple) -> tuple[np.ndarray, list[tuple]]:
    """Each row's (recompute, modules, zero) as an index into a list of distinct ones."""
    n = len(np.atleast_1d(grid["d"]))
    zero = np.broadcast_to(np.asarray(grid["zero"]), (n,))
    if policies and "policy" in grid:
        chosen = [(q.recompute, q.modules) for q in policies]
        which = np.broadcast_to(np.asarray(grid["policy"]), (n,))
    else:
        chosen = [(name, "core_attn") for name in RECOMPUTE]
        which = np.broadcast_to(np.asarray(grid["recompute"]), (n,))
    keys = which.astype(np.int64) * 4 + zero.astype(np.int64)
    distinct = np.unique(keys)
    return np.searchsorted(distinct, keys), [(*chosen[key // 4], int(key % 4)) for key in distinct]


def shape_values(shape) -> dict:
    """The model's letters the step components read (a row adds its parallel sizes, L, the widths and the rates)."""
    values = {name: getattr(shape, name) for name in ("h", "f", "a", "k", "v", "E", "k_e", "f_e", "f_s", "L_e")}
    return values | {
        "dh": shape.dh,
        "q_r": shape.q_lora,
        "kv_r": shape.kv_lora,
        "d_r": shape.rope_dim,
        "d_v": shape.v_dim,
        "n_mtp": shape.mtp,
        "k_w": shape.swa_k,
    }


def tokens_per_s(cluster, grid: dict, system: System, policies: tuple = ()) -> np.ndarray:
    """Predicted tokens/s/GPU of every row (gbs s / (N T), T the step-time model's step on the slowest stage), BLOCK
    rows at a time: each row's score is its own, and the step components' temporaries stay in cache (plan.best's
    bound scores about 500,000 rows for DeepSeek-V3 on 2048 GPUs)."""
    n = len(np.atleast_1d(grid["d"]))
    if n <= BLOCK:
        return _tokens_per_s(cluster, grid, system, policies)
    out = np.empty(n)
    for start in range(0, n, BLOCK):
        rows = slice(start, start + BLOCK)
        block = {name: (x[rows] if np.ndim(x) and len(x) == n else x) for name, x in grid.items()}
        out[rows] = _tokens_per_s(cluster, block, system, policies)
    return out


def _tokens_per_s(cluster, grid: dict, system: System, policies: tuple = ()) -> np.ndarray:
    """tokens_per_s of one block of rows."""
    shape = cluster.shape
    if refusal(shape):
        return np.zeros(len(np.atleast_1d(grid["d"])))
    col = lambda name, default=1: np.asarray(grid.get(name, default), dtype=np.float64)
    par = Parallel(col("d"), col("t"), col("p"), col("c"), col("e"), col("t_e", grid["t"]))
    widths = Training(fp8=cluster.fp8, fp8_param_gather=cluster.fp8_param_gather, **dict(cluster.precision))
    values = shape_values(shape)
    values |= {
        "L": col("max_layers", shape.L / par.p) * par.p,
        **vars(par),
        "vpp": col("vpp"),
        "b": col("b"),
        "m": col("m"),
        "s": float(cluster.s),
        "B_a": widths.act_bytes,
        "B_g": widths.grad_bytes,
        "B_w": widths.weight_bytes,
        "B_o": widths.opt_bytes,
    }
    values["L_w"] = shape.L_w * values["L"] / shape.L  # the slowest stage's share of sliding-window layers
    values |= hardware_values(system, shape, par, float(cluster.s), values["b"], precision_of(widths))
    index, kinds = _choices(cluster, grid, policies)
    step = np.zeros(len(index))
    for i, (recompute, modules, zero) in enumerate(kinds):
        rows = slice(None) if len(kinds) == 1 else np.flatnonzero(index == i)  # one kind: no copy of every column
        ch = Choices.of_shape(shape, recompute, modules, zero)
        picked = {k: (v[rows] if np.ndim(v) and np.size(v) == len(index) else v) for k, v in values.items()}
        parts = components(shape, ch, picked)
        parts.pop("F_model")
        step[rows] = sum(np.broadcast_to(x, np.shape(step[rows])) for x in parts.values())
    return cluster.gbs * cluster.s / (cluster.gpus * step)
