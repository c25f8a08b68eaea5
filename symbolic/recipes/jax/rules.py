"""What jaxcheck's step does not build or lay out: the jax profile's rows of the one rule table (no sympy)."""

from __future__ import annotations

import numpy as np

from ...config.rules import Rule, divides, only
from ...config.hybrid import GDN_CHUNK
from .step import FLASH_BLOCK

# what the model is comes first (a GPT-style model is refused as such, not for its vocabulary), then its layout
RULES: tuple[Rule, ...] = (
    only(
        "no dropout (jax)",
        "dropout",
        False,
        "{x.model} trains with dropout, whose masks jaxcheck's layers do not draw (the paper profile counts them; a "
        "config with its dropout probabilities at 0 verifies)",
        scope="jax",
        model=True,
    ),
    Rule(
        "s <= positions (jax)",
        lambda x: (x.positions == 0) | (x.s <= x.positions),
        lambda x: (
            f"{x.model} has {x.positions} learned positions: a sequence of s={x.s} has no embedding for the "
            f"rest (--seq {x.positions} or less)"
        ),
        scope="jax",
        model=True,
    ),
    Rule(
        "MTP under 1F1B (jax)",
        lambda x: (x.mtp == 0) | (x.schedule == "1f1b"),
        lambda x: (
            f"{x.model} has multi-token-prediction modules, whose buffers the jax profile reads from 1F1B "
            f"steps only: drop --schedule gpipe"
        ),
        scope="jax",
        model=True,
    ),
    Rule(
        "MTP modules of their own (jax)",
        lambda x: np.logical_not(x.mtp_repeated) | (x.mtp <= 1),
        lambda x: (
            f"{x.model} runs one multi-token-prediction module at each of its {x.mtp} depths "
            f"(--mtp-use-repeated-layer), and jaxcheck's model builds one module per depth"
        ),
        scope="jax",
        model=True,
    ),
    only(
        "no sparse-attention indexer (jax)",
        "dsa",
        False,
        "{x.model} has DeepSeek Sparse Attention's indexer, which jaxcheck's model does not build (the paper profile "
        "counts it)",
        scope="jax",
        model=True,
    ),
    Rule(
        "sinks need flash attention (jax)",
        lambda x: np.logical_not(x.sinks) | x.flash_attn,
        lambda x: (
            f"{x.model} has attention sinks, which jaxcheck's flash attention takes and its unfused "
            f"attention does not: drop --no-flash-attn"
        ),
        scope="jax",
        model=True,
    ),
    Rule(
        "capped scores need flash attention (jax)",
        lambda x: np.logical_not(x.attn_softcap) | x.flash_attn,
        lambda x: (
            f"{x.model} soft-caps its attention scores (Gemma 2), which jaxcheck builds inside its flash "
            f"attention only: drop --no-flash-attn"
        ),
        scope="jax",
        model=True,
    ),
    divides(
        "v % t",
        "v",
        "t",
        "tensor parallel t={x.t} does not divide vocabulary v={x.v} of {x.model} (jaxcheck shards the embedding and "
        "head evenly over tensor; --pad-vocab 128 pads it as Megatron-LM does)",
        scope="jax",
        model=True,
    ),
    Rule(
        "vpp == 1",
        lambda x: x.vpp == 1,
        lambda x: (
            f"jaxcheck compiles one SPMD program of pp stages, one model chunk per device (interleaved 1F1B "
            f"needs vpp chunks per device on a circular clock, not built): got vpp={x.vpp}"
        ),
        scope="jax",
    ),
    only(
        "even stages",
        "uneven",
        False,
        "jaxcheck vmaps its pp stages in one SPMD program, so every stage has L/pp layers, and the jax profile alone "
        "takes even stages: mem4d verify, sweep and compile take uneven ones (--stage-layers) one stage kind at a time",
        scope="jax",
    ),
    only(
        "gpipe: jaxcheck only",
        "schedule",
        '1f1b',
        "--schedule gpipe is jaxcheck's (compile, verify, sweep, --profile jax): the paper's formulas and the "
        "trainers' recipes count 1F1B",
        scope="!jax",
    ),
    Rule(
        "s % flash block",
        lambda x: np.logical_not(x.flash_attn) | (x.s % np.minimum(x.s, FLASH_BLOCK) == 0),
        lambda x: (
            f"flash attention runs over key blocks of {FLASH_BLOCK}: sequence s={x.s} must be a multiple of "
            f"{FLASH_BLOCK} (or shorter), or pass --no-flash-attn"
        ),
        scope="jax",
    ),
    Rule(
        "dh % 2",
        lambda x: x.mla | (x.dh % 2 == 0),
        lambda x: f"RoPE needs an even head width, got dh={x.dh}",
        scope="jax",
        model=True,
    ),  # MLA rotates its d_r part only, even by ModelShape's check,
    Rule(
        "e | d (jax)",
        lambda x: x.d % x.e == 0,
        lambda x: (
            f"jaxcheck folds expert parallel over data parallel only: ep={x.e} must divide dp={x.d} "
            f"(Megatron-Core also folds it over tp and cp)"
        ),
        scope="jax",
    ),
    Rule(
        "t_e in {1, t} (jax)",
        lambda x: (x.t_e == 1) | (x.t_e == x.t),
        lambda x: f"jaxcheck splits each expert over all tp={x.t} tensor ranks or none: etp={x.t_e} must be 1 or {x.t}",
        scope="jax",
    ),
    Rule(
        "mixed layers: stages alike, dense first (jax)",
        lambda x: x.stages_alike(x.p),
        lambda x: (
            f"{x.model} mixes {x.L - x.L_e} dense and {x.L_e} MoE layers: one jaxcheck program (and the jax "
            f"profile) stacks them only when each of the pp={x.p} stages holds the same layers, dense ones "
            f"first; mem4d verify and sweep take a model whose stages differ one stage kind at a time"
        ),
        scope="jax",
        model=True,
    ),
    Rule(
        "mixed layers at p > 1: 1F1B (jax)",
        lambda x: (x.L_e == x.L) | (x.L_e == 0) | (x.p == 1) | (x.schedule == "1f1b"),
        lambda x: (
            f"{x.model} mixes dense and MoE layers: jaxcheck's GPipe step runs its two stacks one pipeline "
            f"after the other, which at pp={x.p} is not the model's layer order: use --schedule 1f1b"
        ),
        scope="jax",
        model=True,
    ),
    Rule(
        "Gated DeltaNet: dense or MoE layers (jax)",
        lambda x: np.logical_not(x.gdn) | (x.L_e == 0) | (x.L_e == x.L),
        lambda x: (
            f"{x.model} mixes Gated DeltaNet and attention layers with {x.L - x.L_e} dense and {x.L_e} MoE "
            f"ones: jaxcheck stacks a hybrid's two layer kinds with one kind of MLP"
        ),
        scope="jax",
        model=True,
    ),
    Rule(
        "Gated DeltaNet: stages alike (jax)",
        lambda x: x.linear_alike(x.p),
        lambda x: (
            f"{x.model}'s {x.L_g} Gated DeltaNet layers do not fall evenly on pp={x.p} stages: one jaxcheck "
            f"program (and the jax profile) stacks them only when every stage holds as many; mem4d verify and "
            f"sweep take a model whose stages differ one stage kind at a time"
        ),
        scope="jax",
        model=True,
    ),
    Rule(
        "Gated DeltaNet at p > 1: 1F1B (jax)",
        lambda x: np.logical_not(x.gdn) | (x.p == 1) | (x.schedule == "1f1b"),
        lambda x: (
            f"{x.model} mixes Gated DeltaNet and attention layers: jaxcheck's GPipe step runs its two stacks "
            f"one pipeline after the other, which at pp={x.p} is not the model's layer order: use --schedule "
            f"1f1b"
        ),
        scope="jax",
        model=True,
    ),
    Rule(
        "s % chunk (jax)",
        lambda x: np.logical_not(x.gdn) | (x.s % np.minimum(x.s, GDN_CHUNK) == 0),
        lambda x: (
            f"jaxcheck's Gated DeltaNet runs its rule over chunks of {GDN_CHUNK} tokens (fla's): sequence "
            f"s={x.s} must be a multiple of {GDN_CHUNK} (or shorter)"
        ),
        scope="jax",
        model=True,
    ),
    Rule(
        "jax precision",
        lambda x: (
            np.logical_not(x.master_weights)
            & (x.optimizer == "adamw")
            & (x.logits == "fp32")
            & (x.weight_dtype == x.grad_dtype)
            & (x.grad_dtype == x.moment_dtype)
        ),
        lambda x: (
            "jaxcheck's step is AdamW on its parameters (no master copy), gradients and moments in the param "
            "dtype, fp32 logits: set its precision with --param-dtype / --compute-dtype"
        ),
        scope="jax",
    ),
)
