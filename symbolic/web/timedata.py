"""What the page's plan view reads to rank as `mem4d plan` does: the step-time model's inputs (plan.ranking,
time.evaluate.hardware_values, time.links: the systems and cards with their cited figures, the GEMM share curves, a
model's letters), the proxy's (plan.proxy: its Hardware, Training's widths, a model's letters), a model's layers of
each kind as prefix sums; all read off the Python objects, none restated."""

from __future__ import annotations

import numpy as np

from dataclasses import asdict

from ..config.kinds import KINDS, prefixes
from ..config.parallel import NO_ZERO, ZERO_GRADIENTS, ZERO_OPTIMIZER
from ..config.training import Training
from ..plan.proxy import Hardware
from ..plan.ranking import shape_values
from ..time import flash, gemm
from ..time.cards import CARDS
from ..time.evaluate import TERA, refusal
from ..time.systems import SYSTEMS

DEFAULT_SYSTEM = "dgx-h100"  # plan's --system default (cli/plan.py _ranker)
CARD_FIELDS = ("label", "bf16", "fp8", "fp4", "gemm_bf16", "gemm_fp8", "gemm_fp4", "attn", "hbm_rate")
SYSTEM_FIELDS = ("card_name", "domain", "nvl_ring", "nvl_a2a", "net_ring", "net_a2a")


def hardware() -> dict:
    """The systems, their cards' rates, each card family's GEMM share curve over log2 of its sizes (gemm.share's
    np.interp table: the curve over its largest, as gemm.share divides it) and flash.share's attention tables."""
    curves = {family: (np.asarray(curve) / np.asarray(curve).max()).tolist() for family, curve in gemm.CURVES.items()}
    return {
        "default_system": DEFAULT_SYSTEM,
        "tera": TERA,
        "log2_sizes": np.log2(gemm.SIZES).tolist(),
        "curves": curves,
        "family": dict(gemm.FAMILY),
        "attention": {  # flash.share's tables: causal TFLOP/s by head width over log2 of the sequence
            "log2_seqs": np.log2(flash.SEQS).tolist(),
            "narrow": list(flash.CAUSAL[64]),
            "wide": list(flash.CAUSAL[128]),
            "reference": flash.REFERENCE,
        },
        "cards": {name: {field: getattr(card, field) for field in CARD_FIELDS} for name, card in CARDS.items()},
        "systems": {name: {field: getattr(s, field) for field in SYSTEM_FIELDS} for name, s in SYSTEMS.items()},
    }


def proxy() -> dict:
    """plan.proxy.terms' fixed inputs: its Hardware (plan's --gpus-per-node default), Training's default byte widths
    and capacity factor (plan's --moe-capacity default), the ZeRO stages it tells apart."""
    widths = Training()
    return {
        "hw": asdict(Hardware()),
        "B_a": widths.act_bytes,
        "B_g": widths.grad_bytes,
        "B_w": widths.weight_bytes,
        "C_f": widths.moe_capacity,
        "zero": {"none": NO_ZERO, "optimizer": ZERO_OPTIMIZER, "gradients": ZERO_GRADIENTS},
    }


def model_proxy(shape) -> dict:
    """The model's letters plan.proxy.terms reads (its x.name of each)."""
    names = (
        "h",
        "dh",
        "a",
        "k",
        "L",
        "L_e",
        "mlp_matrices",
        "f",
        "k_e",
        "f_e",
        "f_s",
        "E",
        "v",
        "param_count",
        "q_lora",
        "rope_dim",
        "kv_lora",
        "v_dim",
        "mla",
        "moe_latent",
        "expert_count",
    )
    return {name: getattr(shape, name) for name in names}


def time_widths(fp8: str) -> dict:
    """B_a, B_g, B_w, B_o of plan's step time under --fp8 (plan.ranking.tokens_per_s: Training's widths)."""
    widths = Training(fp8=fp8)
    return {"B_a": widths.act_bytes, "B_g": widths.grad_bytes, "B_w": widths.weight_bytes, "B_o": widths.opt_bytes}


def model_time(shape) -> dict:
    """A model's letters of the step components (plan.ranking.shape_values; P_d and P_x as time.evaluate.components
    sets them), or why the step-time model cannot state it."""
    why = refusal(shape)
    if why:
        return {"refusal": why}
    experts = shape.L_e * shape.E * shape.expert_count  # time.evaluate.components' P_x
    return {
        "values": {**shape_values(shape), "P_d": shape.param_count - experts, "P_x": experts},
        "sliding_window_layers": shape.L_w,
    }  # a row's L_w: their share of its L (plan.ranking.tokens_per_s)


def layer_prefixes(shape) -> dict:
    """For each layer kind some layer of the model is of, the prefix sums of config.kinds.prefixes (a rank's count
    is the sum over its chunks' ranges); the kinds no layer is of are 0 on every rank."""
    return {name: [int(x) for x in sums] for name, sums in prefixes(shape).items() if sums[-1] and name in KINDS}
