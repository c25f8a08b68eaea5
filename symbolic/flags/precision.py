"""The precision and optimizer flags (--weight-dtype ... --logits), each defaulting to the recipe's choice, and the
choices they make."""

from __future__ import annotations

import argparse

from ..config import precision


def add_precision_args(parser) -> None:
    """--weight-dtype --grad-dtype --master-weights/--no-master-weights --optimizer --moment-dtype --logits: each
    defaults to the recipe's (profile's) choice."""
    g = parser.add_argument_group("precision and optimizer (default: the recipe's)")
    g.add_argument(
        "--weight-dtype",
        choices=precision.DTYPES,
        default=None,
        help=f"the weights the step computes with ({_recipes_of('weight_dtype')})",
    )
    g.add_argument(
        "--grad-dtype", choices=precision.GRAD_DTYPES, default=None, help=f"gradients ({_recipes_of('grad_dtype')})"
    )
    g.add_argument(
        "--master-weights",
        dest="master_weights",
        action="store_true",
        default=None,
        help=f"an fp32 master copy of the weights in the optimizer ({_recipes_of('master_weights', True)})",
    )
    g.add_argument(
        "--no-master-weights",
        dest="master_weights",
        action="store_false",
        help=f"no separate master copy ({_recipes_of('master_weights', False)}: its fp32 shards are the master)",
    )
    g.add_argument(
        "--optimizer",
        choices=precision.OPTIMIZERS,
        default=None,
        help="adamw (two moments), sgd (one momentum), adamw8bit (bitsandbytes: two 1-byte moments), "
        "muon (Megatron-Core's: one momentum on the 2-D layer weights, AdamW on the rest; --zero 0, or 1: "
        "its layer-wise distributed optimizer)",
    )
    g.add_argument(
        "--moment-dtype",
        choices=precision.MOMENT_DTYPES,
        default=None,
        help="the optimizer moments' dtype (default fp32; Megatron-Core --exp-avg-dtype)",
    )
    g.add_argument(
        "--logits",
        choices=precision.LOGITS,
        default=None,
        help="what the loss keeps of the logits: fp32 (upcast), bf16 (fused cross entropy), none (chunked)",
    )


def _recipes_of(field: str, value=None) -> str:
    """Each trainer recipe's default of a precision field, grouped: 'megatron, deepspeed: bf16; torchtitan: fp32'
    (given `value`, only the recipes whose default it is)."""
    from ..recipes import REGISTRY

    groups: dict = {}
    for recipe in REGISTRY:
        if recipe.flag and (value is None or recipe.precision[field] == value):
            groups.setdefault(recipe.precision[field], []).append(recipe.flag)
    return "; ".join(", ".join(flags) + ("" if value is not None else f": {key}") for key, flags in groups.items())


def precision_from_args(args: argparse.Namespace, profile: str | None) -> dict:
    """The precision choices: the profile's defaults (Training's without a profile), the flags given over them."""
    from ..recipes import widths

    given = {name: getattr(args, name) for name in precision.FIELDS if getattr(args, name, None) is not None}
    return {**(widths(profile) if profile else {}), **given}
