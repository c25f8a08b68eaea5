"""Validity rules: each a predicate, a one-line message and the profiles it binds; what a rule reads (letters); the
check and plan's masks (no sympy; the rows every profile shares are shared_rules.SHARED, the one table with each
recipe's rows symbolic.recipes.registry.TABLE)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import numpy as np

from . import layout
from .gemma4 import gemma4_mechanisms
from .kinds import mixed
from .errors import BrokenRule
from .features import RULE_LETTERS, RULE_READS
from .glossary import TRAINING_FIELD

# A rule binds every profile ("all"), one profile by its name (a recipe's package declares its rows; the registry,
# symbolic/recipes/registry.py, makes the one table of them), every profile but one ("!name": a flag only that recipe
# has), or a group of recipes its members join ("recipes").


@dataclass(frozen=True)
class Rule:
    """One rule: `holds(x)` is True (or a boolean array) where a configuration satisfies it, `message(x)` one line."""

    name: str
    holds: Callable
    message: Callable
    scope: str = "all"  # "all", a profile's name, "!" + a profile's name, or a group
    model: bool = False  # reads the model's letters (a, k, f, L, v, dh): checked by Training.check(shape)
    policy: bool = False  # reads the recompute policy (no plan grid column): plan filters its (recompute, zero) pairs


def unset(letter: str, default=False) -> Callable:
    """A predicate: `letter` (a flag, or a model's feature) stands at its default, read with getattr where plan's rows
    lack it; True and False defaults read the value itself (numpy's not on arrays), None by identity."""
    if default is True:
        return lambda x: getattr(x, letter, True)
    if default is False:
        return lambda x: np.logical_not(getattr(x, letter, False))
    if default is None:
        return lambda x: getattr(x, letter, None) is None
    return lambda x: getattr(x, letter, default) == default


def only(name: str, letter: str, default, message: str, scope: str, model: bool = False) -> Rule:
    """A row refusing, where `scope` binds, what one profile alone models: `letter` off its default; `message` a
    str.format template of x (one line, e.g. "{x.model} has ...")."""
    return Rule(name, unset(letter, default), lambda x: message.format(x=x), scope=scope, model=model)


def divides(name: str, n: str, d: str, message: str, scope: str = "all", model: bool = False) -> Rule:
    """A row holding where letter `d` divides letter `n` (a parallel size a count of heads, experts or widths);
    `message` a str.format template of x."""
    return Rule(name, lambda x: getattr(x, n) % getattr(x, d) == 0, lambda x: message.format(x=x), scope, model)


def selective(x):
    """Whether the recompute policy is selective, where the configuration has one (plan's grid rows have not: False
    there, and plan.policies applies such a rule to each recompute choice with the model's letters)."""
    return getattr(x, "recompute", None) == "selective"


def letters(training, shape=None) -> SimpleNamespace:
    """What the rules read from a Training (gbs as given, else p b d; m = gbs // (b d)) and, given, a ModelShape.

    Python ints here; plan builds the same namespace from numpy int arrays of every candidate (its balanced rows with
    uneven True and no stage_layers tuple), and the predicates use only operators that work on both."""
    gbs = training.p * training.b * training.d if training.gbs is None else training.gbs
    x = dict(
        d=training.d,
        t=training.t,
        p=training.p,
        c=training.c,
        vpp=training.vpp,
        s=training.s,
        b=training.b,
        gbs=gbs,
        m=gbs // (training.b * training.d),
        sp=training.sp,
        flash_attn=training.flash_attn,
        zero=training.zero,
        stage_layers=training.stage_layers,
        uneven=getattr(training, "uneven", training.stage_layers is not None),
        chunked=getattr(training, "chunked", False),
        e=training.ep,
        t_e=training.etp_size,
        C_f=training.moe_capacity,
        recompute=training.recompute,
        ac_every=training.ac_every,
        zero_init=training.zero_init,
        grad_accum_fusion=training.grad_accum_fusion,
        moe_dispatcher=getattr(training, "moe_dispatcher", "alltoall"),  # plan: all-to-all rows only
        transformer_impl=getattr(training, "transformer_impl", "transformer_engine"),  # plan: TE rows only
        swiglu_fusion=getattr(training, "swiglu_fusion", False),  # plan: unfused rows only
        srelu_fusion=getattr(training, "srelu_fusion", False),  # plan: unfused rows only
        moe_grouped_gemm=getattr(training, "moe_grouped_gemm", False),  # plan: per-expert GEMM rows only
        schedule=training.schedule,
        recompute_modules=training.recompute_modules,
        fp8=training.fp8,
        fp8_param_gather=training.fp8_param_gather,
        compile=training.compile,
        fp8_transpose=getattr(training, "fp8_transpose", True),  # plan: Hopper's rows
        fp8_all_gather=training.fp8_all_gather,
        image_tokens=training.image_tokens,
        freeze_vision=training.freeze_vision,
        cuda_graph=getattr(training, "cuda_graph", "none"),
        tp_comm_overlap=getattr(training, "tp_comm_overlap", False),  # plan: rows without either
        ep_overlap=getattr(training, "ep_overlap", False),  # plan: rows without the combined 1F1B
        native_ce=getattr(training, "native_ce", False),  # plan: rows with the unfused loss
        offload_modules=getattr(training, "offload_modules", ""),  # plan: rows without offloading
        cpu_offload_layers=getattr(training, "cpu_offload_layers", 0),
        recompute_num_layers=getattr(training, "recompute_num_layers", 0),  # plan: every layer
        bf16_start=getattr(training, "num_layers_at_start_in_bf16", 0),  # plan: rows without BF16 layers
        bf16_end=getattr(training, "num_layers_at_end_in_bf16", 0),
        **{name: getattr(training, name) for name in PRECISION},
    )
    placed = {"layout_problem": layout.problem(training, shape)} if shape is not None and x["chunked"] else {}
    return SimpleNamespace(**x, **(model_letters(shape) if shape is not None else {}), **placed)


PRECISION = ("weight_dtype", "grad_dtype", "master_weights", "optimizer", "moment_dtype", "logits")


# what the rules read from a ModelShape under its own name: the fields declared so (features.Features, rule=NAME)
# and these properties; and under a glossary letter (rule=LETTER: the field glossary.TRAINING_FIELD names for it)
PROPERTY_READS = ("dh", "L_e", "L_g", "mla", "dsa", "gdn", "stages_alike", "linear_alike")
MODEL_READS = (*RULE_READS, *PROPERTY_READS)
MODEL_LETTERS = RULE_LETTERS


def model_letters(shape) -> dict:
    """What the rules read from a ModelShape: MODEL_READS, MODEL_LETTERS, and features in one letter each."""
    return dict(
        model=shape.name,
        **{name: getattr(shape, name) for name in MODEL_READS},
        **{letter: getattr(shape, TRAINING_FIELD[letter]) for letter in MODEL_LETTERS},
        bias=shape.qkv_bias or shape.o_bias or shape.mlp_bias or shape.moe_bias or shape.sinks,
        mamba=shape.mamba or shape.blocks,
        gemma=shape.sandwich or shape.logit_softcap or shape.attn_softcap,
        mixed_kinds=mixed(shape),
        per_layer=bool(shape.layer_f),
        vision=shape.vision is not None,
        vision_mask=getattr(shape.vision, "kind", None) == "pixtral",
        latent=shape.moe_latent > 0,
        narrow_v=shape.v_dim > 0 and not shape.mla,
        swa_kv=bool(shape.swa_layers),
        gemma4=gemma4_mechanisms(shape),
    )


def check(x: SimpleNamespace, rules: tuple[Rule, ...]) -> None:
    """Raise BrokenRule (a one-line ConfigError) naming the first rule in `rules` that x breaks."""
    for rule in rules:
        if not rule.holds(x):
            raise BrokenRule(rule.name, rule.message(x))


def masks(x: SimpleNamespace, rules: tuple[Rule, ...], n: int) -> dict[str, np.ndarray]:
    """One boolean array of length n per rule (True where it holds), for x holding arrays of n candidates."""
    return {rule.name: np.broadcast_to(np.asarray(rule.holds(x), dtype=bool), (n,)) for rule in rules}
