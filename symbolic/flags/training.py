"""The model, training, expert, switch, precision and recipe flags shared by every command (symbolic's and
jaxcheck's), and the Training they build: the layer below both command lines."""

from __future__ import annotations

import argparse
import sys

from ..config import precision
from ..config.errors import ConfigError
from ..config.hfconfig import resolve_model
from ..config.shapes import DEFAULT_MODEL, ModelShape
from ..config.training import MOE_DISPATCHERS, Training, training_from_json
from .precision import add_precision_args, precision_from_args
from .switches import add_switch_args
from .values import capacity, non_negative_int, positive_int, stage_layers


def add_model_args(parser: argparse.ArgumentParser, default: str = DEFAULT_MODEL) -> None:
    parser.add_argument(
        "--model",
        default=default,
        metavar="M",
        help=f"preset name or path to a Hugging Face config.json (default: {default})",
    )
    add_text_only_arg(parser)


def add_text_only_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--text-only",
        action="store_true",
        help="a multimodal config.json (Llama 4, Qwen3-VL, Qwen3.5, Kimi-K2.5, Mistral Small 3, "
        "Gemma 3): count its language model alone; without it all but Kimi-K2.5 are counted with "
        "their vision tower, Kimi-K2.5 refused (its tower is not modelled)",
    )


def add_training_args(parser: argparse.ArgumentParser, defaults: Training = Training()) -> None:
    """--dp --tp --pp --cp --vpp --seq --mbs --gbs --recompute and the on/off switches (help shows `defaults`)."""
    g = parser.add_argument_group("parallelism and batch")
    g.add_argument("--dp", type=positive_int, default=defaults.d, help="data parallel size d")
    g.add_argument("--tp", type=positive_int, default=defaults.t, help="tensor (+sequence) parallel size t")
    g.add_argument("--pp", type=positive_int, default=defaults.p, help="pipeline parallel size p")
    g.add_argument("--cp", type=positive_int, default=defaults.c, help="context parallel size c")
    g.add_argument("--vpp", type=positive_int, default=defaults.vpp, help="virtual pipeline stages per rank")
    g.add_argument("--seq", type=positive_int, default=defaults.s, help="sequence length s")
    g.add_argument("--mbs", type=positive_int, default=defaults.b, help="micro batch size b")
    g.add_argument(
        "--gbs",
        type=positive_int,
        default=defaults.gbs,
        help="global batch in sequences"
        + (" (default: mbs*dp*pp, one micro batch per pipeline stage)" if defaults.gbs is None else ""),
    )
    g.add_argument(
        "--stage-layers",
        type=stage_layers,
        default=defaults.stage_layers,
        metavar="N,N,...",
        help="layers of each pipeline stage, pp entries summing to L (with --vpp, each a multiple of vpp: "
        "the stage's chunks); default L/pp each",
    )
    g.add_argument(
        "--pipeline-layout",
        default=defaults.pipeline_layout,
        metavar="LAYOUT",
        help="Megatron-Core's --pipeline-model-parallel-layout: pp x vpp virtual stages of E (embedding), "
        "t (layer), m (MTP), L (loss) split at '|', e.g. 'Et*3|(tt|)*29,m|L'",
    )
    g.add_argument(
        "--account-for-embedding",
        dest="account_embedding",
        action="store_true",
        help="Megatron-Core's --account-for-embedding-in-pipeline-split: the embedding is one of L + 1 "
        "units split evenly over pp x vpp virtual stages",
    )
    g.add_argument(
        "--account-for-loss",
        dest="account_loss",
        action="store_true",
        help="Megatron-Core's --account-for-loss-in-pipeline-split: the loss is one unit of the split",
    )
    add_expert_args(g, defaults)
    add_vision_args(g, defaults)
    add_switch_args(g, defaults, recipe=defaults == Training())
    add_precision_args(parser)


def add_recipe_arg(parser) -> None:
    """--recipe NAME and --profile: whose accounting (megatron, torchtitan, deepspeed) or jaxcheck's step (jax)."""
    from ..recipes import PROFILES, RECIPES

    parser.add_argument(
        "--recipe",
        choices=RECIPES,
        default=None,
        help="the trainer whose allocations to count (default megatron: the paper's accounting)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        choices=PROFILES,
        help="memory profile (paper = --recipe megatron; jax: jaxcheck's compiled step)",
    )


def profile_from_args(args: argparse.Namespace) -> str:
    """The profile --recipe and --profile name (default paper); both, naming different ones: a one-line error."""
    from ..recipes import DEFAULT_PROFILE, RECIPES

    recipe = RECIPES.get(args.recipe) if getattr(args, "recipe", None) else None
    if recipe and args.profile and args.profile != recipe:
        raise ConfigError(f"--recipe {args.recipe} and --profile {args.profile} conflict: give one")
    return recipe or args.profile or DEFAULT_PROFILE


def recipe_defaults(args: argparse.Namespace, profile: str | None) -> dict:
    """--zero and --recompute as given, or (left unset) the recipe's defaults, else Training's."""
    from ..recipes import PROFILES

    own = {
        "zero": Training().zero,
        "recompute": Training().recompute,
        **(PROFILES[profile].defaults if profile in PROFILES else {}),
    }
    return {key: own[key] if getattr(args, key, None) is None else getattr(args, key) for key in own}


def add_expert_args(group, defaults: Training = Training()) -> None:
    """--ep, --etp, --moe-capacity: how a model's routed experts are laid out (Megatron-Core) and how many tokens
    an expert takes."""
    group.add_argument(
        "--ep",
        type=positive_int,
        default=defaults.ep,
        help="expert parallel size e: the routed experts of a layer split over e ranks (folded, with "
        "etp, over the dp x tp x cp ranks of a stage)",
    )
    group.add_argument(
        "--etp",
        type=positive_int,
        default=defaults.etp,
        help="expert tensor parallel size t_e: each expert's SwiGLU split over t_e ranks "
        "(default: tp, as Megatron-Core)",
    )
    group.add_argument(
        "--moe-capacity",
        type=capacity,
        default=defaults.moe_capacity,
        metavar="C_f",
        help="tokens an expert receives over an even share: the capacity factor, or for a dropless "
        "run the routing imbalance to allow for (1: the even load the load-balancing loss aims at)",
    )
    add_dispatcher_arg(group, defaults.moe_dispatcher)


def add_dispatcher_arg(group, default: str = Training.moe_dispatcher) -> None:
    """--moe-dispatcher: Megatron-Core's token dispatcher (estimate's, formula's and plan's rows alike)."""
    group.add_argument(
        "--moe-dispatcher",
        default=default,
        choices=MOE_DISPATCHERS,
        help="--recipe megatron: Megatron-Core's token dispatcher (--moe-token-dispatcher-type): "
        "alltoall, allgather (Megatron-LM's default: tokens all-gathered over etp x ep into a "
        "persistent buffer), or deepep (flex with DeepEP's fused all-to-all); default: alltoall",
    )


def add_vision_args(group, defaults: Training = Training()) -> None:
    """--image-tokens, --freeze-vision: a multimodal model's vision tower (Qwen3-VL, Qwen3.5)."""
    group.add_argument(
        "--image-tokens",
        type=non_negative_int,
        default=defaults.image_tokens,
        metavar="N",
        help="a multimodal model: image tokens per sample through its vision tower, whose saved "
        "tensors it adds (default: 0, the activations of text alone)",
    )
    group.add_argument(
        "--freeze-vision",
        action="store_true",
        default=defaults.freeze_vision,
        help="a multimodal model: its vision tower frozen (its weights alone: no gradients, optimizer "
        "states or saved tensors)",
    )


def model_from_args(args: argparse.Namespace) -> ModelShape:
    if not args.model.strip():
        raise ConfigError(f"--model {args.model!r}: an empty name; give a preset or a config.json (or its folder)")
    return resolve_model(args.model, getattr(args, "text_only", False))


def card_from_args(args: argparse.Namespace) -> str:
    """The card the job runs on: --gpu, else --system's card, else time.cards.DEFAULT_CARD (the step time's, as
    cli/steptime.chosen_system picks it; a --gpu that disagrees with --system is refused there)."""
    from ..time.cards import DEFAULT_CARD
    from ..time.systems import system

    if getattr(args, "gpu", None):
        return args.gpu
    return system(args.system).card_name if getattr(args, "system", None) else DEFAULT_CARD


def training_from_args(
    args: argparse.Namespace, shape: ModelShape | None = None, profile: str | None = None
) -> Training:
    """Build and (given the model) check the training config, with the precision `profile` models by default
    (without one, the Training defaults: Megatron's bf16 mixed precision) and the precision flags over it; errors are
    one-line ConfigErrors."""
    fields = {key: value for key, value in vars(args).items() if key not in precision.FIELDS}
    fields["gpu"] = card_from_args(args)
    training = training_from_json({**fields, **recipe_defaults(args, profile), **precision_from_args(args, profile)})
    if shape is not None and shape.vision and not training.image_tokens and not training.freeze_vision:
        print(
            f"note: {shape.name}'s vision tower is counted, its activations are text-only's (give --image-tokens N "
            "per sample)",
            file=sys.stderr,
        )
    return training.check(shape, profile or "all") if shape is not None else training
