"""Megatron-LM's flags refused by the other profiles, and what Megatron-Core 0.16.1 cannot run: the megatron recipe's
rows of the one rule table."""

from __future__ import annotations

import numpy as np

from ...config.rules import Rule, only
from .model_rules import MODEL_RULES


def _cpu_offload_allowed(x):
    """--cpu-offload-layers where Megatron-Core runs it and mem4d counts it (plan's rows never set it)."""
    if getattr(x, "cpu_offload_layers", 0) == 0:
        return True
    return (
        (x.p == 1)
        & (x.recompute == "none")
        & (x.offload_modules == "")
        & (x.cpu_offload_layers < x.L)
        & np.logical_not((x.E > 0) | x.mla | x.gdn | x.mamba | x.mtp)
    )


def _recompute_layers_allowed(x):
    """--recompute-num-layers where mem4d counts it: a dense transformer without virtual stages (Megatron-Core applies
    it to each model chunk; plan's rows never set it)."""
    if getattr(x, "recompute_num_layers", 0) == 0:
        return True
    return (x.vpp == 1) & np.logical_not((x.E > 0) | x.gdn | x.mamba | x.mtp)


def _bf16_layers_allowed(x):
    """--num-layers-at-start/end-in-bf16 where Megatron-Core 0.16.1 runs them (transformer_config.py:988-1020: not
    with delayed scaling, at most L/p each) and mem4d counts them (components.bf16_layers)."""
    if getattr(x, "bf16_start", 0) == 0 and getattr(x, "bf16_end", 0) == 0:
        return True
    plain = (x.fp8 == "none") | (x.fp8 != "delayed") & np.logical_not(x.fp8_param_gather)
    return (
        plain
        & (x.bf16_start * x.p <= x.L)
        & (x.bf16_end * x.p <= x.L)
        & (x.cpu_offload_layers == 0)
        & np.logical_not(x.swa_kv | x.gdn | x.mamba)
    )


def _bf16_layers_refusal(x) -> str:
    """The one line for a BF16 split that Megatron-Core refuses or mem4d does not count."""
    return (
        f"--num-layers-at-start-in-bf16 {x.bf16_start} --num-layers-at-end-in-bf16 {x.bf16_end} "
        f"(Megatron-LM --first-last-layers-bf16): Megatron-Core runs at most L/p = {x.L}/{x.p} each and not with "
        f"--fp8 delayed (TransformerConfig raises); mem4d counts them without --fp8-param-gather (the BF16 layers' "
        f"own weights), --cpu-offload-layers and sliding-window or hybrid layers; got --fp8 {x.fp8}"
        f"{' --fp8-param-gather' if x.fp8_param_gather else ''}"
    )


# the flags only Megatron-LM has, refused by every other profile: (name, the letter, its default, the message)
_FLAGS = (
    (
        "--recompute-modules: Megatron only",
        "recompute_modules",
        "core_attn",
        "--recompute-modules {x.recompute_modules} is Megatron-Core's (--recipe megatron); jaxcheck's and the other "
        "recipes' selective policies are their own",
    ),
    (
        "--no-grad-accum-fusion: Megatron only",
        "grad_accum_fusion",
        True,
        "--no-grad-accum-fusion is Megatron-LM's --no-gradient-accumulation-fusion: give it with --recipe megatron",
    ),
    (
        "--moe-dispatcher: Megatron only",
        "moe_dispatcher",
        "alltoall",
        "--moe-dispatcher {x.moe_dispatcher} is Megatron-Core's token dispatcher (--recipe megatron); the other "
        "recipes model their own expert-parallel exchange",
    ),
    (
        "--transformer-impl: Megatron only",
        "transformer_impl",
        "transformer_engine",
        "--transformer-impl {x.transformer_impl} is Megatron-LM's (--recipe megatron)",
    ),
    (
        "--swiglu-fusion: Megatron only",
        "swiglu_fusion",
        False,
        "--swiglu-fusion is Megatron-Core's fused SwiGLU (--recipe megatron)",
    ),
    (
        "--srelu-fusion: Megatron only",
        "srelu_fusion",
        False,
        "--srelu-fusion is Megatron-Core's fused weighted squared ReLU (--recipe megatron)",
    ),
    (
        "--moe-grouped-gemm: Megatron only",
        "moe_grouped_gemm",
        False,
        "--moe-grouped-gemm is Megatron-Core's TEGroupedMLP (--recipe megatron)",
    ),
    (
        "--offload-modules: Megatron only",
        "offload_modules",
        "",
        "--offload-modules {x.offload_modules} is Megatron-Core's fine-grained activation offloading (--recipe "
        "megatron)",
    ),
    (
        "--cpu-offload-layers: Megatron only",
        "cpu_offload_layers",
        0,
        "--cpu-offload-layers {x.cpu_offload_layers} is Megatron-Core's layer-level activation offloading (--recipe "
        "megatron)",
    ),
    (
        "--recompute-num-layers: Megatron only",
        "recompute_num_layers",
        0,
        "--recompute-num-layers {x.recompute_num_layers} is Megatron-Core's full recompute of some layers (--recipe "
        "megatron)",
    ),
)

RULES: tuple[Rule, ...] = (
    tuple(only(*row, scope="!paper") for row in _FLAGS)
    + (
        Rule(
            "--fp8: Transformer Engine's recipes",
            lambda x: x.fp8 != "rowwise",
            lambda x: (
                "--fp8 rowwise is torchao's Float8 recipe (--recipe torchtitan); Megatron-LM's Transformer Engine "
                "recipes are delayed, tensorwise, blockwise, mxfp8 and nvfp4"
            ),
            scope="paper",
        ),
        Rule(
            "--fp8: GQA attention",
            lambda x: (x.fp8 == "none") | np.logical_not(x.dsa | x.gdn | x.mamba),
            lambda x: (
                f"--fp8 {x.fp8} is modelled for GQA or latent attention with dense or MoE MLPs; {x.model}'s "
                f"sparse-attention indexer, Gated DeltaNet or Mamba-2 layers' FP8 tensors are not"
            ),
            scope="paper",
            model=True,
        ),
        Rule(
            "--swiglu-fusion: a SwiGLU MLP",
            lambda x: np.logical_not(getattr(x, "swiglu_fusion", False)) | (x.mlp == "swiglu"),
            lambda x: f"--swiglu-fusion fuses a SwiGLU MLP; {x.model}'s MLP is {x.mlp} (contradicting)",
            scope="paper",
            model=True,
        ),
        Rule(
            "--srelu-fusion: squared-ReLU experts",
            lambda x: np.logical_not(getattr(x, "srelu_fusion", False)) | ((x.mlp == "relu2") & (x.E > 0)),
            lambda x: f"--srelu-fusion fuses squared-ReLU routed experts; {x.model} has none (contradicting)",
            scope="paper",
            model=True,
        ),
        Rule(
            "recompute layers: dense, vpp = 1",
            _recompute_layers_allowed,
            lambda x: (
                f"--recompute-num-layers {x.recompute_num_layers}: mem4d counts it for a dense transformer without "
                f"virtual stages (Megatron-Core applies it to each model chunk); got vpp = {x.vpp}"
                f"{'' if not (x.E or x.gdn or x.mamba or x.mtp) else ', ' + x.model + ' (experts, MTP or hybrid layers)'}"
            ),
            scope="paper",
            model=True,
        ),
        # megatron-core 0.16.1 TransformerConfig.__post_init__ refuses it with p > 1, with recompute, with fine-grained
        # offloading and from L layers on; mem4d's count takes the first layers to be alike (a dense transformer)
        Rule(
            "CPU offloading: p = 1, no recompute, dense, < L",
            _cpu_offload_allowed,
            lambda x: (
                f"--cpu-offload-layers {x.cpu_offload_layers}: Megatron-Core offloads fewer than L = {x.L} layers, "
                f"at p = 1, without recompute or --offload-modules (TransformerConfig refuses the rest), and mem4d "
                f"counts it for dense GQA transformers; got p = {x.p}, --recompute {x.recompute}"
                f"{', --offload-modules ' + x.offload_modules if x.offload_modules else ''}"
                f"{'' if not (x.E or x.mla or x.gdn or x.mamba or x.mtp) else ', ' + x.model + ' (experts, MLA, MTP or hybrid layers)'}"
            ),
            scope="paper",
            model=True,
        ),
        Rule(
            "--num-layers-at-*-in-bf16: Megatron only",
            lambda x: (getattr(x, "bf16_start", 0) == 0) & (getattr(x, "bf16_end", 0) == 0),
            lambda x: (
                "--num-layers-at-start/end-in-bf16 are Megatron-LM's --first-last-layers-bf16 (--recipe megatron)"
            ),
            scope="!paper",
        ),
        Rule(
            "BF16 first/last layers: as Megatron-Core runs them",
            _bf16_layers_allowed,
            _bf16_layers_refusal,
            scope="paper",
            model=True,
        ),
        Rule(
            "pipeline layouts: Megatron only",
            lambda x: np.logical_not(
                getattr(x, "chunked", False)
                | getattr(x, "account_embedding", False)
                | getattr(x, "account_loss", False)
            ),
            lambda x: "--pipeline-layout and --account-for-embedding/loss are Megatron-Core's (--recipe megatron)",
            scope="!paper",
        ),
        Rule(
            "--optimizer muon: Megatron only",
            lambda x: x.optimizer != "muon",
            lambda x: "--optimizer muon is Megatron-Core's Muon (--recipe megatron)",
            scope="!paper",
        ),
        Rule(
            "Muon: no sharded gradients",
            lambda x: (x.optimizer != "muon") | (x.zero <= 1),
            lambda x: (
                f"--optimizer muon with --zero {x.zero}: Megatron-Core 0.16.1's Muon refuses the distributed "
                "optimizer (optimizer/muon.py); its layer-wise distributed optimizer (--zero 1) deals whole "
                "parameters' optimizer states to the d c ranks and keeps gradients and weights whole "
                "(layer_wise_optimizer.py): give --zero 0 or 1"
            ),
            scope="paper",
        ),
        Rule(
            "Muon: a plain transformer",
            lambda x: (
                (x.optimizer != "muon")
                | np.logical_not(
                    x.bias
                    | (x.qk_norm != "none")
                    | x.mtp
                    | x.mla
                    | x.gdn
                    | x.mamba
                    | x.shared_gate
                    | x.gemma
                    | x.swa_kv
                )
            ),
            lambda x: (
                f"--optimizer muon splits a transformer's parameters into 2-D layer weights (Muon) and embeddings, "
                f"head and layer norms (AdamW); {x.model}'s biases, q/k norms, MTP, latent attention, hybrid "
                f"layers, gates or sliding-window sinks are not split"
            ),
            scope="paper",
            model=True,
        ),
    )
    + MODEL_RULES
)
