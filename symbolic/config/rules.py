"""Validity rules: each a predicate, a one-line message and the profiles it binds, and the rows every profile shares
(no sympy; the one table with each recipe's rows is symbolic.recipes.registry.TABLE)."""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import numpy as np

from . import layout
from .gemma4 import gemma4_mechanisms
from .kinds import mixed
from .errors import BrokenRule
from .glossary import TRAINING_FIELD
from .parallel import Parallel

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


def _uneven(x) -> bool:
    """True where stages are uneven: --stage-layers given (one config), or a balanced row of plan (arrays)."""
    return x.uneven


def _units(x):
    """Pipeline units beside the L layers: the embedding and the loss where accounted (--account-for-*; plan)."""
    return int(getattr(x, "account_embedding", False)) + int(getattr(x, "account_loss", False))


def _has(x, module: str) -> bool:
    """Whether --recompute-modules names `module` (one configuration's string)."""
    return module in x.recompute_modules.split(",")


def selective(x):
    """Whether the recompute policy is selective, where the configuration has one (plan's grid rows have not: False
    there, and plan.policies applies such a rule to each recompute choice with the model's letters)."""
    return getattr(x, "recompute", None) == "selective"


def _groups(x) -> Parallel:
    """The parallel groups of the letters x reads (ints of one configuration, or plan's arrays)."""
    return Parallel(x.d, x.t, x.p, x.c, x.e, x.t_e)


def _split(x) -> str:
    """--stage-layers as given ("7,8,8,7"; "" when none was)."""
    return ",".join(map(str, x.stage_layers or ()))


# the rows every profile shares; each recipe's own are in its package (symbolic/recipes/<name>/rules.py)
SHARED: tuple[Rule, ...] = (
    # the training config alone (Training.__post_init__)
    Rule("gbs % (b d)", lambda x: x.gbs % (x.b * x.d) == 0,
         lambda x: f"global batch gbs={x.gbs} not divisible by mbs x dp = {x.b}x{x.d} = {x.b * x.d}"),
    Rule("s % 2c", lambda x: (x.c == 1) | (x.s % (2 * x.c) == 0),
         lambda x: f"sequence length s={x.s} not divisible by 2 x cp = {2 * x.c} (load-balanced causal context parallel)"),
    Rule("s % (t c)", lambda x: np.logical_not(x.sp) | (x.t == 1) | (x.s % (x.t * x.c) == 0),
         lambda x: f"sequence length s={x.s} not divisible by tp x cp = {x.t * x.c} (sequence parallel)"),
    Rule("vpp > 1 needs p > 1", lambda x: (x.vpp == 1) | (x.p > 1),
         lambda x: f"virtual pipeline stages vpp={x.vpp} need pipeline parallel pp > 1"),
    Rule("m % p (vpp > 1)", lambda x: (x.vpp == 1) | (x.m % x.p == 0),
         lambda x: f"interleaved 1F1B needs micro batches m={x.m} divisible by pp={x.p}"),
    Rule("--recompute-modules with selective", lambda x: (x.recompute_modules == "core_attn") | (x.recompute == "selective"),
         lambda x: (f"--recompute-modules {x.recompute_modules} names what selective recompute reruns, but "
                    f"--recompute is {x.recompute}: give --recompute selective"), policy=True),
    Rule("e t_e | d t c", lambda x: _groups(x).stage_ranks % _groups(x).expert_ranks == 0,
         lambda x: (f"expert parallel x expert tensor parallel = ep x etp = {x.e}x{x.t_e} must divide the dp x tp x cp "
                    f"= {x.d}x{x.t}x{x.c} = {_groups(x).stage_ranks} ranks of a pipeline stage (Megatron-Core folds the "
                    f"expert groups over them)")),
    # --stage-layers (plan's balanced rows carry no tuple: their splits are built to satisfy these)
    Rule("stage layers: p entries", lambda x: x.stage_layers is None or len(x.stage_layers) == x.p,
         lambda x: (f"--stage-layers {_split(x)} has {len(x.stage_layers or ())} entries, but pp={x.p}: give one "
                    f"layer count per pipeline stage")),
    Rule("stage layers % vpp", lambda x: x.stage_layers is None or all(n % x.vpp == 0 for n in x.stage_layers),
         lambda x: f"--stage-layers {_split(x)}: with vpp={x.vpp} each stage's layers form vpp chunks, so every entry "
                   f"must be a multiple of {x.vpp}"),
    # the training config on a model (Training.check)
    # first of them, so that a model no recipe holds is named before any divisor: Gemma 4 (transformers 5.25.0
    # models/gemma4/modeling_gemma4.py), which Megatron-Core 0.16.1, Megatron-Bridge 0.3.1, torchtitan and DeepSpeed
    # do not have; its layers' tensors (config/gemma4.py) are in no recipe's table, and estimating them as Gemma 3's
    # would be a silent wrong number
    Rule("no Gemma 4 layers", lambda x: x.gemma4 == "",
         lambda x: (f"{x.model} has Gemma 4's layers ({x.gemma4}), whose weights and saved tensors no recipe models "
                    f"yet: its parameters are counted, its memory is not estimated (not as Gemma 3's either)"), model=True),
    Rule("a % t", lambda x: x.a % x.t == 0,
         lambda x: f"tensor parallel t={x.t} does not divide attention heads a={x.a} of {x.model}", model=True),
    Rule("k % t", lambda x: x.k % x.t == 0,
         lambda x: f"tensor parallel t={x.t} does not divide KV heads k={x.k} of {x.model}", model=True),
    Rule("k_w % t", lambda x: x.k_w % x.t == 0,  # k_w = 0: no sliding-window layers of their own KV heads
         lambda x: (f"tensor parallel t={x.t} does not divide the sliding-window layers' KV heads k_w={x.k_w} of "
                    f"{x.model}"), model=True),
    Rule("f % t", lambda x: (x.f % x.t == 0) | ((x.E > 0) & (x.L_e == x.L)),
         lambda x: f"tensor parallel t={x.t} does not divide MLP size f={x.f} of {x.model}", model=True),
    Rule("e > 1 needs experts", lambda x: (x.E > 0) | ((x.e == 1) & (x.t_e == x.t)),
         lambda x: (f"--ep {x.e} / --etp {x.t_e}: {x.model} has no routed experts, so expert parallelism does not apply "
                    f"(leave ep = 1 and etp = tp)"), model=True),
    Rule("vision flags need a tower", lambda x: x.vision | ((x.image_tokens == 0) & np.logical_not(x.freeze_vision)),
         lambda x: (f"--image-tokens / --freeze-vision: {x.model} has no vision tower (a multimodal config.json read "
                    f"without --text-only has one)"), model=True),
    Rule("Pixtral's tower: frozen or no image tokens",
         lambda x: np.logical_not(x.vision_mask) | (x.image_tokens == 0) | x.freeze_vision,
         lambda x: (f"--image-tokens {x.image_tokens}: {x.model}'s Pixtral tower also keeps a block-diagonal mask over "
                    "all of a micro batch's patches (quadratic in them, transformers' sdpa path), not modelled; "
                    "pass --freeze-vision or leave --image-tokens 0"), model=True),
    Rule("capacity needs experts", lambda x: (x.E > 0) | (x.C_f == 1.0),
         lambda x: (f"--moe-capacity {x.C_f:g}: {x.model} has no routed experts, so a capacity factor does not apply"),
         model=True),
    Rule("E % e", lambda x: x.E % x.e == 0,
         lambda x: f"expert parallel ep={x.e} does not divide the E={x.E} routed experts of {x.model}", model=True),
    Rule("f_e % t_e", lambda x: x.f_e % x.t_e == 0,
         lambda x: (f"expert tensor parallel etp={x.t_e} does not divide the expert width f_e={x.f_e} of {x.model} "
                    f"(give --etp)"), model=True),
    # learned absolute positions are an nn.Embedding of s_p rows: transformers 5.25.0 GPT2Model.wpe
    # (models/gpt2/modeling_gpt2.py), Megatron-Core 0.16.1 LanguageModelEmbedding.position_embeddings
    # (models/common/embeddings/language_model_embedding.py, max_sequence_length rows): a position past them has no row
    Rule("s <= s_p (learned positions)", lambda x: (x.positions == 0) | (x.s <= x.positions),
         lambda x: (f"sequence length s={x.s} exceeds the {x.positions} learned positions of {x.model} (its position "
                    f"embedding has {x.positions} rows): --seq {x.positions} at most"), model=True),
    # no flash kernel takes a head dimension off 8 or over 256 (Transformer Engine 2.20.2, pytorch/attention/
    # dot_product_attention/utils.py get_attention_backend: FlashAttention 2 "Supported after padding: padded head_dim
    # %8 = 0, padded head_dim <= 256", FlashAttention 3 head_dim_qk <= 256): the trainer runs unfused attention then,
    # which keeps the s x s scores (UnfusedDotProductAttention; PyTorch's SDPA likewise falls back to its math path)
    Rule("flash attention: dh % 8, dh <= 256",
         lambda x: np.logical_not(x.flash_attn) | ((x.dh % 8 == 0) & (x.dh <= 256)),
         lambda x: (f"head_dim={x.dh} of {x.model}: no flash attention kernel takes it (FlashAttention 2 needs a "
                    f"multiple of 8 up to 256, Transformer Engine's get_attention_backend), so attention runs unfused "
                    f"and keeps the s x s scores: give --no-flash-attn"), scope="!jax", model=True),
    Rule("f_s % t", lambda x: x.f_s % x.t == 0,
         lambda x: f"tensor parallel t={x.t} does not divide the shared experts' width f_s={x.f_s} of {x.model}",
         model=True),
    Rule("mla_up_proj needs MLA", lambda x: x.mla | np.logical_not(_has(x, "mla_up_proj")),
         lambda x: f"--recompute-modules mla_up_proj: {x.model} has no multi-head latent attention", model=True),
    Rule("moe_act needs experts", lambda x: (x.E > 0) | np.logical_not(_has(x, "moe_act")),
         lambda x: f"--recompute-modules moe_act: {x.model} has no routed experts", model=True),
    Rule("MoE with t > 1 needs SP", lambda x: (x.E == 0) | (x.t == 1) | x.sp,
         lambda x: (f"{x.model} has routed experts: with tensor parallel t={x.t} Megatron-Core requires sequence "
                    f"parallelism (drop --no-sp)"), model=True),
    Rule("L % (p vpp)", lambda x: _uneven(x) | ((x.L + _units(x)) % (x.p * x.vpp) == 0)
         & ((_units(x) == 0) | ((x.L + _units(x)) // x.p > 1)),
         lambda x: (f"pipeline stages pp x vpp = {x.p}x{x.vpp} = {x.p * x.vpp} do not divide layers L={x.L} "
                    + (f"+ {_units(x)} accounted units (each rank at least one layer) " if _units(x) else "")
                    + f"of {x.model}: " + _uneven_hint(x)), model=True),
    Rule("stage layers sum to L", lambda x: x.stage_layers is None or sum(x.stage_layers) == x.L,
         lambda x: f"--stage-layers {_split(x)} sum to {sum(x.stage_layers or ())}, but {x.model} has L={x.L} layers",
         model=True),
    Rule("layers placed", lambda x: np.logical_not(bool(getattr(x, "layout_problem", "")) | (
        x.mixed_kinds & (_units(x) > 0) & (x.vpp > 1) & (x.p > 1))),
         lambda x: getattr(x, "layout_problem", "") or (
             f"{x.model} has layers of several kinds: the accounted units leave chunks of unequal sizes on a rank "
             "under vpp, not modelled (the in-flight count weighs every layer alike)"), model=True),
    # phimoe's router (transformers 5.25.0 modeling_phimoe.py sparsemixer, PhimoeMultiplier) keeps per token two
    # masked bf16 [E] softmaxes, two bool [E] masks, its indices and multipliers, and the input jitter's noise [h]
    # (records/router-saved-phimoe-cpu.jsonl), not the top-k router's tensors the recipes list; no trainer has it
    Rule("no SparseMixer router", lambda x: np.logical_not(x.sparsemixer),
         lambda x: (f"{x.model} routes with phimoe's SparseMixer (2 experts Gumbel-sampled, a custom gradient, "
                    f"transformers' PhimoeTopKRouter), which no recipe's trainer has: its saved tensors are not the "
                    f"top-k router's the recipes list, and it is not estimated as one"), model=True),
    Rule("no LM head bias", lambda x: np.logical_not(x.head_bias),
         lambda x: (f"{x.model} has a bias [v] on its LM head (lm_head_bias), which the trainers' output layers do "
                    f"not have (Megatron-Core's output_layer, torchtitan's output: bias-free): not modelled"),
         model=True),
    # DeciLM's block configs (config.blocks): each layer's attention present or not and its own KV heads and MLP width;
    # the recipes' closed forms hold L_r layers of one width f (or of the kinds config.kinds counts) per stage
    Rule("no block config per layer", lambda x: np.logical_not(x.per_layer),
         lambda x: (f"{x.model} has a block config per layer (DeciLM / nemotron-nas: attention or none, each layer's "
                    f"own KV heads and MLP width): counted, but no recipe sums a stage's layers of different widths "
                    f"(its MLP widths, its attention layers), so its memory is not estimated"), model=True),
    Rule("uneven: whole chunks", lambda x: np.logical_not(_uneven(x)) | getattr(x, "chunked", False)
         | ((x.L % x.vpp == 0) & (x.p * x.vpp <= x.L)),
         lambda x: (f"uneven stages of vpp={x.vpp} chunks each need L={x.L} of {x.model} to be a multiple of vpp and "
                    f"at least pp x vpp = {x.p * x.vpp}"), model=True),
)


def _uneven_hint(x) -> str:
    """What makes pp x vpp stages of L layers possible: an uneven split (only where its chunks can be whole, the
    "uneven: whole chunks" row), else other sizes."""
    if x.L % x.vpp or x.p * x.vpp > x.L:
        return (f"choose pp and vpp whose product divides {x.L} (an uneven --stage-layers split needs L a multiple of "
                f"vpp and at least pp x vpp)")
    chunks = f", each a multiple of vpp={x.vpp}" if x.vpp > 1 else ""
    return (f"give --stage-layers (pp entries summing to {x.L}{chunks}; estimate, latex and report choose one with "
            f"--balance)")



def letters(training, shape=None) -> SimpleNamespace:
    """What the rules read from a Training (gbs as given, else p b d; m = gbs // (b d)) and, given, a ModelShape.

    Python ints here; plan builds the same namespace from numpy int arrays of every candidate (its balanced rows with
    uneven True and no stage_layers tuple), and the predicates use only operators that work on both."""
    gbs = training.p * training.b * training.d if training.gbs is None else training.gbs
    x = dict(d=training.d, t=training.t, p=training.p, c=training.c, vpp=training.vpp, s=training.s, b=training.b,
             gbs=gbs, m=gbs // (training.b * training.d), sp=training.sp, flash_attn=training.flash_attn,
             zero=training.zero, stage_layers=training.stage_layers, uneven=getattr(training, "uneven", training.stage_layers is not None),
             chunked=getattr(training, "chunked", False),
             e=training.ep, t_e=training.etp_size, C_f=training.moe_capacity, recompute=training.recompute,
             ac_every=training.ac_every, zero_init=training.zero_init, grad_accum_fusion=training.grad_accum_fusion,
             moe_dispatcher=getattr(training, "moe_dispatcher", "alltoall"),  # plan: all-to-all rows only
             transformer_impl=getattr(training, "transformer_impl", "transformer_engine"),  # plan: TE rows only
             swiglu_fusion=getattr(training, "swiglu_fusion", False),  # plan: unfused rows only
             srelu_fusion=getattr(training, "srelu_fusion", False),  # plan: unfused rows only
             schedule=training.schedule, recompute_modules=training.recompute_modules, fp8=training.fp8,
             fp8_param_gather=training.fp8_param_gather, compile=training.compile,
             fp8_transpose=getattr(training, "fp8_transpose", True),  # plan: Hopper's rows
             fp8_all_gather=training.fp8_all_gather, image_tokens=training.image_tokens,
             freeze_vision=training.freeze_vision, cuda_graph=getattr(training, "cuda_graph", "none"),
             tp_comm_overlap=getattr(training, "tp_comm_overlap", False),  # plan: rows without either
             ep_overlap=getattr(training, "ep_overlap", False),  # plan: rows without the combined 1F1B
             native_ce=getattr(training, "native_ce", False),  # plan: rows with the unfused loss
             offload_modules=getattr(training, "offload_modules", ""),  # plan: rows without offloading
             cpu_offload_layers=getattr(training, "cpu_offload_layers", 0),
             **{name: getattr(training, name) for name in PRECISION})
    placed = {"layout_problem": layout.problem(training, shape)} if shape is not None and x["chunked"] else {}
    return SimpleNamespace(**x, **(model_letters(shape) if shape is not None else {}), **placed)


PRECISION = ("weight_dtype", "grad_dtype", "master_weights", "optimizer", "moment_dtype", "logits")


# what the rules read from a ModelShape under its own name (a field or property), and under a glossary letter (the
# field glossary.TRAINING_FIELD names for it)
MODEL_READS = ("a", "k", "f", "L", "v", "dh", "E", "f_e", "f_s", "L_e", "L_g", "qk_norm", "shared_gate", "sinks",
               "moe_bias", "mlp", "norm", "positions", "dropout", "mla", "mtp", "mtp_repeated", "expert_bias",
               "sigmoid", "dsa", "gdn", "attn_softcap", "stages_alike", "linear_alike", "sparsemixer", "head_bias")
MODEL_LETTERS = ("n_gk", "n_m", "g_m", "k_w")


def model_letters(shape) -> dict:
    """What the rules read from a ModelShape: MODEL_READS, MODEL_LETTERS, and features in one letter each."""
    return dict(model=shape.name, **{name: getattr(shape, name) for name in MODEL_READS},
                **{letter: getattr(shape, TRAINING_FIELD[letter]) for letter in MODEL_LETTERS},
                bias=shape.qkv_bias or shape.o_bias or shape.mlp_bias or shape.moe_bias or shape.sinks,
                mamba=shape.mamba or shape.blocks, gemma=shape.sandwich or shape.logit_softcap or shape.attn_softcap,
                mixed_kinds=mixed(shape), per_layer=bool(shape.layer_f),
                vision=shape.vision is not None, vision_mask=getattr(shape.vision, "kind", None) == "pixtral",
                latent=shape.moe_latent > 0,
                narrow_v=shape.v_dim > 0 and not shape.mla, swa_kv=bool(shape.swa_layers),
                gemma4=gemma4_mechanisms(shape))


def check(x: SimpleNamespace, rules: tuple[Rule, ...]) -> None:
    """Raise BrokenRule (a one-line ConfigError) naming the first rule in `rules` that x breaks."""
    for rule in rules:
        if not rule.holds(x):
            raise BrokenRule(rule.name, rule.message(x))


def masks(x: SimpleNamespace, rules: tuple[Rule, ...], n: int) -> dict[str, np.ndarray]:
    """One boolean array of length n per rule (True where it holds), for x holding arrays of n candidates."""
    return {rule.name: np.broadcast_to(np.asarray(rule.holds(x), dtype=bool), (n,)) for rule in rules}
