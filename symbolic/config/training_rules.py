"""The rule rows a training config alone decides (Training.__post_init__ checks them): batch, sequence, pipeline,
expert groups and --stage-layers; shared by every profile (no sympy)."""

from __future__ import annotations

import numpy as np

from .parallel import Parallel
from .rules import Rule


def _groups(x) -> Parallel:
    """The parallel groups of the letters x reads (ints of one configuration, or plan's arrays)."""
    return Parallel(x.d, x.t, x.p, x.c, x.e, x.t_e)


def layers_given(x) -> str:
    """--stage-layers as given ("7,8,8,7"; "" when none was)."""
    return ",".join(map(str, x.stage_layers or ()))


TRAINING_RULES: tuple[Rule, ...] = (
    # the training config alone (Training.__post_init__)
    Rule(
        "gbs % (b d)",
        lambda x: x.gbs % (x.b * x.d) == 0,
        lambda x: f"global batch gbs={x.gbs} not divisible by mbs x dp = {x.b}x{x.d} = {x.b * x.d}",
    ),
    Rule(
        "s % 2c",
        lambda x: (x.c == 1) | (x.s % (2 * x.c) == 0),
        lambda x: (
            f"sequence length s={x.s} not divisible by 2 x cp = {2 * x.c} (load-balanced causal context parallel)"
        ),
    ),
    Rule(
        "s % (t c)",
        lambda x: np.logical_not(x.sp) | (x.t == 1) | (x.s % (x.t * x.c) == 0),
        lambda x: f"sequence length s={x.s} not divisible by tp x cp = {x.t * x.c} (sequence parallel)",
    ),
    Rule(
        "vpp > 1 needs p > 1",
        lambda x: (x.vpp == 1) | (x.p > 1),
        lambda x: f"virtual pipeline stages vpp={x.vpp} need pipeline parallel pp > 1",
    ),
    Rule(
        "m % p (vpp > 1)",
        lambda x: (x.vpp == 1) | (x.m % x.p == 0),
        lambda x: f"interleaved 1F1B needs micro batches m={x.m} divisible by pp={x.p}",
    ),
    Rule(
        "--recompute-modules with selective",
        lambda x: (x.recompute_modules == "core_attn") | (x.recompute == "selective"),
        lambda x: (
            f"--recompute-modules {x.recompute_modules} names what selective recompute reruns, but "
            f"--recompute is {x.recompute}: give --recompute selective"
        ),
        policy=True,
    ),
    Rule(
        "e t_e | d t c",
        lambda x: _groups(x).stage_ranks % _groups(x).expert_ranks == 0,
        lambda x: (
            f"expert parallel x expert tensor parallel = ep x etp = {x.e}x{x.t_e} must divide the dp x tp x cp "
            f"= {x.d}x{x.t}x{x.c} = {_groups(x).stage_ranks} ranks of a pipeline stage (Megatron-Core folds the "
            f"expert groups over them)"
        ),
    ),
    # --stage-layers (plan's balanced rows carry no tuple: their splits are built to satisfy these)
    Rule(
        "stage layers: p entries",
        lambda x: x.stage_layers is None or len(x.stage_layers) == x.p,
        lambda x: (
            f"--stage-layers {layers_given(x)} has {len(x.stage_layers or ())} entries, but pp={x.p}: give one "
            f"layer count per pipeline stage"
        ),
    ),
    Rule(
        "stage layers % vpp",
        lambda x: x.stage_layers is None or all(n % x.vpp == 0 for n in x.stage_layers),
        lambda x: (
            f"--stage-layers {layers_given(x)}: with vpp={x.vpp} each stage's layers form vpp chunks, so every entry "
            f"must be a multiple of {x.vpp}"
        ),
    ),
)
