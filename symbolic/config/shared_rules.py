"""The rule rows every profile shares: those of the training config alone (training_rules.py) and those of the
training config on a model (Training.check), in the order the table lists them (no sympy)."""

from __future__ import annotations

import numpy as np

from .rules import Rule, divides, only
from .training_rules import TRAINING_RULES, layers_given


def _uneven(x) -> bool:
    """True where stages are uneven: --stage-layers given (one config), or a balanced row of plan (arrays)."""
    return x.uneven


def _units(x):
    """Pipeline units beside the L layers: the embedding and the loss where accounted (--account-for-*; plan)."""
    return int(getattr(x, "account_embedding", False)) + int(getattr(x, "account_loss", False))


def _has(x, module: str) -> bool:
    """Whether --recompute-modules names `module` (one configuration's string)."""
    return module in x.recompute_modules.split(",")


def _uneven_hint(x) -> str:
    """What makes pp x vpp stages of L layers possible: an uneven split (only where its chunks can be whole, the
    "uneven: whole chunks" row), else other sizes."""
    if x.L % x.vpp or x.p * x.vpp > x.L:
        return (
            f"choose pp and vpp whose product divides {x.L} (an uneven --stage-layers split needs L a multiple of "
            f"vpp and at least pp x vpp)"
        )
    chunks = f", each a multiple of vpp={x.vpp}" if x.vpp > 1 else ""
    return (
        f"give --stage-layers (pp entries summing to {x.L}{chunks}; estimate, latex and report choose one with "
        f"--balance)"
    )


# the rows every profile shares; each recipe's own are in its package (symbolic/recipes/<name>/rules.py)
SHARED: tuple[Rule, ...] = TRAINING_RULES + (
    # the training config on a model (Training.check)
    # first of them, so that a model no recipe holds is named before any divisor: Gemma 4 (transformers 5.25.0
    # models/gemma4/modeling_gemma4.py), which Megatron-Core 0.16.1, Megatron-Bridge 0.3.1, torchtitan and DeepSpeed
    # do not have; its layers' tensors (config/gemma4.py) are in no recipe's table, and estimating them as Gemma 3's
    # would be a silent wrong number
    only(
        "no Gemma 4 layers",
        "gemma4",
        "",
        "{x.model} has Gemma 4's layers ({x.gemma4}), whose weights and saved tensors no recipe models yet: its "
        "parameters are counted, its memory is not estimated (not as Gemma 3's either)",
        scope="all",
        model=True,
    ),
    divides(
        "a % t", "a", "t", "tensor parallel t={x.t} does not divide attention heads a={x.a} of {x.model}", model=True
    ),
    divides("k % t", "k", "t", "tensor parallel t={x.t} does not divide KV heads k={x.k} of {x.model}", model=True),
    Rule(
        "k_w % t",
        lambda x: x.k_w % x.t == 0,  # k_w = 0: no sliding-window layers of their own KV heads
        lambda x: (
            f"tensor parallel t={x.t} does not divide the sliding-window layers' KV heads k_w={x.k_w} of {x.model}"
        ),
        model=True,
    ),
    Rule(
        "f % t",
        lambda x: (x.f % x.t == 0) | ((x.E > 0) & (x.L_e == x.L)),
        lambda x: f"tensor parallel t={x.t} does not divide MLP size f={x.f} of {x.model}",
        model=True,
    ),
    Rule(
        "e > 1 needs experts",
        lambda x: (x.E > 0) | ((x.e == 1) & (x.t_e == x.t)),
        lambda x: (
            f"--ep {x.e} / --etp {x.t_e}: {x.model} has no routed experts, so expert parallelism does not apply "
            f"(leave ep = 1 and etp = tp)"
        ),
        model=True,
    ),
    Rule(
        "vision flags need a tower",
        lambda x: x.vision | ((x.image_tokens == 0) & np.logical_not(x.freeze_vision)),
        lambda x: (
            f"--image-tokens / --freeze-vision: {x.model} has no vision tower (a multimodal config.json read "
            f"without --text-only has one)"
        ),
        model=True,
    ),
    Rule(
        "Pixtral's tower: frozen or no image tokens",
        lambda x: np.logical_not(x.vision_mask) | (x.image_tokens == 0) | x.freeze_vision,
        lambda x: (
            f"--image-tokens {x.image_tokens}: {x.model}'s Pixtral tower also keeps a block-diagonal mask over "
            "all of a micro batch's patches (quadratic in them, transformers' sdpa path), not modelled; "
            "pass --freeze-vision or leave --image-tokens 0"
        ),
        model=True,
    ),
    Rule(
        "capacity needs experts",
        lambda x: (x.E > 0) | (x.C_f == 1.0),
        lambda x: f"--moe-capacity {x.C_f:g}: {x.model} has no routed experts, so a capacity factor does not apply",
        model=True,
    ),
    divides(
        "E % e",
        "E",
        "e",
        "expert parallel ep={x.e} does not divide the E={x.E} routed experts of {x.model}",
        model=True,
    ),
    divides(
        "f_e % t_e",
        "f_e",
        "t_e",
        "expert tensor parallel etp={x.t_e} does not divide the expert width f_e={x.f_e} of {x.model} (give --etp)",
        model=True,
    ),
    # learned absolute positions are an nn.Embedding of s_p rows: transformers 5.25.0 GPT2Model.wpe
    # (models/gpt2/modeling_gpt2.py), Megatron-Core 0.16.1 LanguageModelEmbedding.position_embeddings
    # (models/common/embeddings/language_model_embedding.py, max_sequence_length rows): a position past them has no row
    Rule(
        "s <= s_p (learned positions)",
        lambda x: (x.positions == 0) | (x.s <= x.positions),
        lambda x: (
            f"sequence length s={x.s} exceeds the {x.positions} learned positions of {x.model} (its position "
            f"embedding has {x.positions} rows): --seq {x.positions} at most"
        ),
        model=True,
    ),
    # no flash kernel takes a head dimension off 8 or over 256 (Transformer Engine 2.20.2, pytorch/attention/
    # dot_product_attention/utils.py get_attention_backend: FlashAttention 2 "Supported after padding: padded head_dim
    # %8 = 0, padded head_dim <= 256", FlashAttention 3 head_dim_qk <= 256): the trainer runs unfused attention then,
    # which keeps the s x s scores (UnfusedDotProductAttention; PyTorch's SDPA likewise falls back to its math path)
    Rule(
        "flash attention: dh % 8, dh <= 256",
        lambda x: np.logical_not(x.flash_attn) | ((x.dh % 8 == 0) & (x.dh <= 256)),
        lambda x: (
            f"head_dim={x.dh} of {x.model}: no flash attention kernel takes it (FlashAttention 2 needs a "
            f"multiple of 8 up to 256, Transformer Engine's get_attention_backend), so attention runs unfused "
            f"and keeps the s x s scores: give --no-flash-attn"
        ),
        scope="!jax",
        model=True,
    ),
    divides(
        "f_s % t",
        "f_s",
        "t",
        "tensor parallel t={x.t} does not divide the shared experts' width f_s={x.f_s} of {x.model}",
        model=True,
    ),
    Rule(
        "mla_up_proj needs MLA",
        lambda x: x.mla | np.logical_not(_has(x, "mla_up_proj")),
        lambda x: f"--recompute-modules mla_up_proj: {x.model} has no multi-head latent attention",
        model=True,
    ),
    Rule(
        "moe_act needs experts",
        lambda x: (x.E > 0) | np.logical_not(_has(x, "moe_act")),
        lambda x: f"--recompute-modules moe_act: {x.model} has no routed experts",
        model=True,
    ),
    Rule(
        "MoE with t > 1 needs SP",
        lambda x: (x.E == 0) | (x.t == 1) | x.sp,
        lambda x: (
            f"{x.model} has routed experts: with tensor parallel t={x.t} Megatron-Core requires sequence "
            f"parallelism (drop --no-sp)"
        ),
        model=True,
    ),
    Rule(
        "L % (p vpp)",
        lambda x: (
            _uneven(x) | ((x.L + _units(x)) % (x.p * x.vpp) == 0) & ((_units(x) == 0) | ((x.L + _units(x)) // x.p > 1))
        ),
        lambda x: (
            f"pipeline stages pp x vpp = {x.p}x{x.vpp} = {x.p * x.vpp} do not divide layers L={x.L} "
            + (f"+ {_units(x)} accounted units (each rank at least one layer) " if _units(x) else "")
            + f"of {x.model}: "
            + _uneven_hint(x)
        ),
        model=True,
    ),
    Rule(
        "stage layers sum to L",
        lambda x: x.stage_layers is None or sum(x.stage_layers) == x.L,
        lambda x: (
            f"--stage-layers {layers_given(x)} sum to {sum(x.stage_layers or ())}, but {x.model} has L={x.L} layers"
        ),
        model=True,
    ),
    Rule(
        "layers placed",
        lambda x: np.logical_not(
            bool(getattr(x, "layout_problem", "")) | (x.mixed_kinds & (_units(x) > 0) & (x.vpp > 1) & (x.p > 1))
        ),
        lambda x: (
            getattr(x, "layout_problem", "")
            or (
                f"{x.model} has layers of several kinds: the accounted units leave chunks of unequal sizes on a rank "
                "under vpp, not modelled (the in-flight count weighs every layer alike)"
            )
        ),
        model=True,
    ),
    # phimoe's router (transformers 5.25.0 modeling_phimoe.py sparsemixer, PhimoeMultiplier) keeps per token two
    # masked bf16 [E] softmaxes, two bool [E] masks, its indices and multipliers, and the input jitter's noise [h]
    # (records/router-saved-phimoe-cpu.jsonl), not the top-k router's tensors the recipes list; no trainer has it
    only(
        "no SparseMixer router",
        "sparsemixer",
        False,
        "{x.model} routes with phimoe's SparseMixer (2 experts Gumbel-sampled, a custom gradient, transformers' "
        "PhimoeTopKRouter), which no recipe's trainer has: its saved tensors are not the top-k router's the recipes "
        "list, and it is not estimated as one",
        scope="all",
        model=True,
    ),
    only(
        "no LM head bias",
        "head_bias",
        False,
        "{x.model} has a bias [v] on its LM head (lm_head_bias), which the trainers' output layers do not have "
        "(Megatron-Core's output_layer, torchtitan's output: bias-free): not modelled",
        scope="all",
        model=True,
    ),
    # DeciLM's block configs (config.blocks): each layer's attention present or not and its own KV heads and MLP width;
    # the recipes' closed forms hold L_r layers of one width f (or of the kinds config.kinds counts) per stage
    only(
        "no block config per layer",
        "per_layer",
        False,
        "{x.model} has a block config per layer (DeciLM / nemotron-nas: attention or none, each layer's own KV heads "
        "and MLP width): counted, but no recipe sums a stage's layers of different widths (its MLP widths, its "
        "attention layers), so its memory is not estimated",
        scope="all",
        model=True,
    ),
    Rule(
        "uneven: whole chunks",
        lambda x: (
            np.logical_not(_uneven(x)) | getattr(x, "chunked", False) | ((x.L % x.vpp == 0) & (x.p * x.vpp <= x.L))
        ),
        lambda x: (
            f"uneven stages of vpp={x.vpp} chunks each need L={x.L} of {x.model} to be a multiple of vpp and "
            f"at least pp x vpp = {x.p * x.vpp}"
        ),
        model=True,
    ),
)
