"""What Megatron-Core 0.16.1 cannot run of a model's layers, or only the megatron recipe models (its experts, value
heads, latent MoE, sparse attention, hybrids, unfused attention): the model rows of the megatron recipe's part of the
one rule table, after its flags' rows (rules.py)."""

from __future__ import annotations

import numpy as np

from ...config.rules import Rule, only, selective


def _combined_1f1b(x):
    """--ep-overlap where Megatron-Core takes it and mem4d reads its schedule (plan's rows never have it)."""
    if not getattr(x, "ep_overlap", False):
        return True
    return (x.E > 0) & (x.e > 1) & (x.p > 1) & (x.vpp > 1) & (x.recompute != "full") & (x.mtp <= 1)


def _softmax_fused(x):
    """Whether the fused scaled-masked softmax takes unfused attention's [b, a/t, s, s] scores (ints or plan's arrays),
    so that it keeps its output alone (components.attention.unfused_core). Transformer Engine 2.9.0
    pytorch/attention/dot_product_attention/softmax.py FusedScaleMaskSoftmax.is_kernel_available: 16 < s < 16384,
    s % 8, b a/t % 4, s % the kernel's batches per block (8 up to s = 128, else 4; NVTE_MASKED_SOFTMAX_FUSION at its
    default 1); megatron-core 0.16.1 fusions/fused_softmax.py under --transformer-impl local: 16 < s <= 4096, s % 4,
    b a/t % 4 and % the batches per block (--masked-softmax-fusion, Megatron-LM's default; the reader refuses --no-).
    Causal attention needs the queries to span the keys: no context parallelism (neither runs it unfused)."""
    heads = x.b * (x.a // x.t)  # s % 8 covers TE's batches per block; Megatron-Core's is 8 up to s = 128
    te = (x.s > 16) & (x.s < 16384) & (x.s % 8 == 0) & (heads % 4 == 0)
    local = (x.s > 16) & (x.s <= 4096) & (x.s % 4 == 0) & (heads % 4 == 0) & ((x.s > 128) | (heads % 8 == 0))
    impl = x.transformer_impl == "local"  # operators only (no np.where): the web page traces the rule
    return x.flash_attn | (((impl & local) | (np.logical_not(impl) & te)) & (x.c == 1))


_KERNEL = {
    False: "Transformer Engine's takes 16 < s < 16384, s % 8 = 0, b a/t % 4 = 0",
    True: "Megatron-Core's takes 16 < s <= 4096, s % 4 = 0, b a/t % 4 = 0",
}  # by --transformer-impl local

# what only the megatron recipe models of a model (Gated DeltaNet: jaxcheck too), refused where `scope` binds:
# (name, the letter, the scope, the message). MiMo-V2-Flash's attention (config.swa): the megatron recipe counts value
# heads of their own width and the sliding-window layers' own KV heads and sinks (components.weights gqa_params,
# attention._narrow_v, the Lw_r kind); the other recipes' and jax's components hold one head width and one KV-head
# count in every layer. Gated DeltaNet hybrids as Megatron-Core 0.16.1 runs them (ssm/gated_delta_net.py), which
# jaxcheck builds too (jaxcheck.model.gdn)
_LAYERS = (
    (
        "value heads of their own width: Megatron only",
        "narrow_v",
        "!paper",
        "{x.model}'s value heads are narrower than its query/key heads (v_head_dim), which only the megatron recipe "
        "models (give --recipe megatron)",
    ),
    (
        "sliding-window KV heads of their own: Megatron only",
        "swa_kv",
        "!paper",
        "{x.model}'s sliding-window layers have KV heads and sinks of their own (swa_num_key_value_heads), which only "
        "the megatron recipe models (give --recipe megatron)",
    ),
    (
        "latent MoE: Megatron only",
        "latent",
        "!paper",
        "{x.model} is a latent MoE, which only the megatron recipe models (Megatron-Core 0.16.1's --moe-latent-size; "
        "give --recipe megatron)",
    ),
    (
        "Gated DeltaNet: Megatron and jaxcheck",
        "gdn",
        "recipes",
        "{x.model} has Gated DeltaNet layers, which only the megatron recipe and jaxcheck model (Megatron-Core "
        "0.16.1's GatedDeltaNet; give --recipe megatron)",
    ),
    (
        "vision tower: Megatron only",
        "vision",
        "!paper",
        "{x.model} has a vision tower, which only the megatron recipe models (--recipe megatron; --text-only counts "
        "the language model alone)",
    ),
    (
        "Mamba-2: Megatron only",
        "mamba",
        "!paper",
        "{x.model} has Mamba-2 layers, which only the megatron recipe models (Megatron-Core 0.16.1's MambaMixer; give "
        "--recipe megatron)",
    ),
)

# Megatron-LM's flags of its kernels and schedules, refused by every other profile: (name, the letter, its default,
# the message)
_FLAGS = (
    (
        "--no-fp8-transpose: Megatron only",
        "fp8_transpose",
        True,
        "--no-fp8-transpose is Transformer Engine's Float8Tensor on Blackwell (--recipe megatron)",
    ),
    (
        "--cuda-graph: Megatron only",
        "cuda_graph",
        "none",
        "--cuda-graph is Megatron-LM's --cuda-graph-impl (--recipe megatron)",
    ),
    (
        "--native-ce: Megatron only",
        "native_ce",
        False,
        "--native-ce is Megatron-LM's --cross-entropy-fusion-impl native (--recipe megatron)",
    ),
    (
        "--ep-overlap: Megatron only",
        "ep_overlap",
        False,
        "--ep-overlap is Megatron-LM's --overlap-moe-expert-parallel-comm (--recipe megatron)",
    ),
)

MODEL_RULES: tuple[Rule, ...] = (
    Rule(
        "GeLU experts: Megatron only",
        lambda x: (x.E == 0) | (x.mlp == "swiglu"),
        lambda x: (
            f"{x.model}'s routed experts are {'GeLU' if x.mlp == 'gelu' else 'squared-ReLU'} MLPs, which only "
            f"the megatron recipe models (Megatron-Core 0.16.1's TEGroupedMLP without --swiglu; give --recipe "
            f"megatron)"
        ),
        scope="!paper",
        model=True,
    ),
    *(only(name, letter, False, message, scope, model=True) for name, letter, scope, message in _LAYERS),
    # the all-gather dispatcher's buffers (components.moe_allgather, mpu) are read at width h
    Rule(
        "latent MoE: the all-to-all dispatcher",
        lambda x: np.logical_not(x.latent) | (getattr(x, "moe_dispatcher", "alltoall") == "alltoall"),
        lambda x: (
            f"{x.model} is a latent MoE: its dispatch at width d_l is modelled for the alltoall dispatcher, "
            f"not {x.moe_dispatcher}"
        ),
        scope="paper",
        model=True,
    ),
    # DeepSeek Sparse Attention as Megatron-Core 0.16.1 runs it (transformer/experimental_attention_variant/dsa.py)
    Rule(
        "DSA: no context parallel",
        lambda x: np.logical_not(x.dsa) | (x.c == 1),
        lambda x: (
            f"{x.model} has DeepSeek Sparse Attention, whose unfused sparse attention and indexer in "
            f"Megatron-Core 0.16.1 see the local sequence only: context parallel cp={x.c} is not modelled"
        ),
        scope="paper",
        model=True,
    ),
    Rule(
        "DSA: no core_attn or mla_up_proj recompute",
        lambda x: (
            np.logical_not(x.dsa)
            | np.logical_not(selective(x))
            | np.logical_not(
                ("core_attn" in x.recompute_modules.split(",")) | ("mla_up_proj" in x.recompute_modules.split(","))
            )
        ),
        lambda x: (
            f"{x.model} has DeepSeek Sparse Attention: Megatron-Core 0.16.1's checkpointed core attention "
            f"does not pass it the hidden states and query latent its indexer reads, and mla_up_proj with it "
            f"is not modelled; give --recompute-modules without core_attn and mla_up_proj (e.g. layernorm"
            f"{',moe_act' if x.E else ''}), --recompute full or none"
        ),
        scope="paper",
        model=True,
    ),
    # Mamba-2 (ssm/mamba_mixer.py, mamba_context_parallel.py): heads and groups split over t, then over c; groups
    # replicated over CP ranks (fewer local groups than c) are not modelled
    Rule(
        "Mamba-2: heads and groups over t c",
        lambda x: np.logical_not(x.mamba) | (x.n_m == 0) | ((x.n_m % (x.t * x.c) == 0) & (x.g_m % (x.t * x.c) == 0)),
        lambda x: (
            f"tensor x context parallel t*c={x.t * x.c} does not divide the {x.n_m} Mamba-2 heads and "
            f"{x.g_m} groups of {x.model} (Megatron-Core splits both over t, then over c; groups replicated "
            f"over CP ranks are not modelled)"
        ),
        scope="paper",
        model=True,
    ),
    Rule(
        "Gated DeltaNet: no context parallel",
        lambda x: np.logical_not(x.gdn) | (x.c == 1),
        lambda x: (
            f"{x.model} has Gated DeltaNet layers, which Megatron-Core 0.16.1 runs without context "
            f"parallelism (gated_delta_net.py: 'TODO: support CP'): cp={x.c} is not modelled"
        ),
        scope="gdn",
        model=True,
    ),
    Rule(
        "Gated DeltaNet: n_gk % t",
        lambda x: np.logical_not(x.gdn) | (x.n_gk % x.t == 0),
        lambda x: (
            f"tensor parallel t={x.t} does not divide the {x.n_gk} Gated DeltaNet key heads of {x.model} "
            f"(Megatron-Core splits its heads, convolution channels and in_proj over t)"
        ),
        scope="gdn",
        model=True,
    ),
    # megatron-core 0.16.1 models/backends.py LocalSpecProvider.core_attention: DotProductAttention, unfused
    Rule(
        "--transformer-impl local: unfused attention",
        lambda x: np.logical_not(x.flash_attn) | (x.transformer_impl != "local"),
        lambda x: (
            "--transformer-impl local builds Megatron-Core's own DotProductAttention, unfused whatever the "
            "attention backend (LocalSpecProvider.core_attention): give --no-flash-attn"
        ),
        scope="paper",
    ),
    Rule(
        "unfused attention: the fused softmax",
        _softmax_fused,
        lambda x: (
            f"unfused attention at s={x.s}, b={x.b}, a/t={x.a // x.t}, cp={x.c}: the fused softmax kernel "
            f"does not take it ({_KERNEL[x.transformer_impl == 'local']}; none with context parallelism), and "
            f"PyTorch's softmax, keeping its fp32 output beside the bf16 probabilities, is not modelled"
        ),
        scope="paper",
        model=True,
    ),
    Rule(
        "--no-fp8-transpose: not blockwise",
        lambda x: getattr(x, "fp8_transpose", True) | (x.fp8 != "blockwise"),
        lambda x: (
            "--no-fp8-transpose with --fp8 blockwise: Transformer Engine's Float8BlockwiseQTensor on a "
            "Blackwell card is not modelled"
        ),
        scope="paper",
    ),
    Rule(
        "DSA: unfused either way",
        lambda x: np.logical_not(x.dsa) | x.flash_attn,
        lambda x: (
            f"{x.model} has DeepSeek Sparse Attention, which Megatron-Core 0.16.1 computes unfused whatever "
            f"the flag: --no-flash-attn does not apply"
        ),
        scope="paper",
        model=True,
    ),
    # Megatron-LM arguments.py: --tp-comm-overlap asserts --sequence-parallel
    Rule(
        "--tp-comm-overlap: sequence parallel",
        lambda x: np.logical_not(getattr(x, "tp_comm_overlap", False)) | x.sp,
        lambda x: "--tp-comm-overlap needs sequence parallelism (Megatron-LM asserts --sequence-parallel)",
        scope="paper",
    ),
    Rule(
        "--native-ce: fp32 logits",
        lambda x: np.logical_not(getattr(x, "native_ce", False)) | (x.logits == "fp32"),
        lambda x: (
            f"--native-ce: the native fused cross entropy upcasts the logits to fp32 (calculate_logits_max), "
            f"got --logits {x.logits}"
        ),
        scope="paper",
    ),
    # megatron-core 0.16.1 transformer_config.py asserts EP > 1, no full recompute and at most one MTP layer (with
    # pp > 1) beside it, and vpp where pp > 1; at pp 1 it runs combined_1f1b_schedule_for_no_pipelining, not read
    Rule(
        "--ep-overlap: the combined 1F1B",
        _combined_1f1b,
        lambda x: (
            f"--ep-overlap (the combined 1F1B) needs experts with ep > 1, pp > 1 with --vpp (Megatron-Core "
            f"asserts; pp 1's schedule is not modelled), no full recompute and at most one MTP layer; got "
            f"E={x.E}, ep={x.e}, pp={x.p}, vpp={x.vpp}, --recompute {x.recompute}, {x.mtp} MTP layers"
        ),
        scope="paper",
        model=True,
    ),
    # components.graphs counts TransformerLayers' static inputs; Mamba-2 and Gated DeltaNet layers' are not read
    Rule(
        "--cuda-graph: transformer layers",
        lambda x: (getattr(x, "cuda_graph", "none") == "none") | np.logical_not(x.gdn | x.mamba),
        lambda x: (
            f"--cuda-graph {x.cuda_graph}: the static inputs of {x.model}'s Mamba-2 or Gated DeltaNet layers' "
            f"graphs are not modelled"
        ),
        scope="paper",
        model=True,
    ),
    *(only(*row, scope="!paper") for row in _FLAGS),
)
