"""What changes the form of the step-time expressions (the model's kinds, recompute, ZeRO stage, the MoE token
dispatcher); no sympy."""

from __future__ import annotations

from typing import NamedTuple

from .provider import Provider


class Choices(NamedTuple):
    """What changes the step's expressions: the model's kinds (experts' biases, narrow value heads, sliding-window
    layers among them), recompute, ZeRO stage, the MoE token dispatcher."""

    moe: bool
    mla: bool
    q_latent: bool
    n_f: int
    recompute: str  # none | selective | full
    modules: tuple[str, ...]  # selective recompute's modules
    zero: int
    dispatcher: str = "alltoall"  # Training.moe_dispatcher, or a flex backend the validation's rows ran (DISPATCHERS)
    moe_bias: bool = False  # routed experts with biases (gpt-oss): their down bias is added outside the GEMM
    narrow_v: bool = False  # value heads d_v narrower than dh (config.architecture's narrow_v)
    swa: bool = False  # L_w sliding-window layers of k_w KV heads (config.architecture's swa)
    qk_norm: bool = False  # RMSNorm on the queries and keys (Megatron-Core qk_layernorm)
    rope: bool = True  # rotary position embeddings (a GPT's learned absolute positions run no RoPE kernel)
    window: tuple[int, int, int] = (0, 0, 1)  # (keys a sliding window spans, layers with it, all layers): gpt-oss
    rope_fused: bool = True  # TE's fused RoPE (Provider.rope_fused)
    bda_fused: bool = True  # bias, dropout and residual add as one kernel (Provider.bias_dropout_fusion)
    clamp: bool = False  # the experts' GLU input clamped before the fused activation (Provider.clamp)
    out_bias: bool = False  # the attention output projection's bias, added by the bias-dropout-add (o_bias)
    mlp_bias: bool = False  # a dense MLP's fc2 bias, added likewise (mlp_bias)
    cross_entropy: str = "te"  # the loss's kernel (Provider.cross_entropy)
    router_fp32: bool = True  # an FP32 router (Provider.router_dtype, "fp32" by default): its backward in TF32, T_rgrad
    rc_block: int = 0  # full recompute of the first N layers of a stage (--recompute-method block; 0: every layer)

    @classmethod
    def of(cls, shape, training, dispatcher: str | None = None, provider: Provider = Provider()) -> Choices:
        """A job's choices: its shape's, its Training's and the provider's."""
        return cls.of_shape(
            shape,
            training.recompute,
            training.recompute_modules,
            training.zero,
            dispatcher=dispatcher or training.moe_dispatcher,
            rope_fused=provider.rope_fused,
            bda_fused=provider.bias_dropout_fusion,
            clamp=provider.clamp > 0,
            cross_entropy=provider.cross_entropy,
            router_fp32=shape.moe and provider.router_dtype == "fp32",
            rc_block=training.recompute_num_layers * (training.recompute_method == "block"),
        )

    @classmethod
    def of_shape(cls, shape, recompute: str, modules: str, zero: int, **rest) -> Choices:
        """A shape's choices with this recompute, its comma-joined modules and the ZeRO stage (plan's rows, the rest
        at their defaults; `of` gives them from a Training)."""
        return cls(
            shape.moe,
            shape.mla,
            bool(shape.q_lora),
            shape.mlp_matrices,
            recompute,
            tuple(modules.split(",")),
            zero,
            **model_kinds(shape),
            **rest,
        )


def model_kinds(shape) -> dict:
    """A shape's moe_bias, narrow_v, swa, qk_norm, rope and sliding window, read as config.architecture reads them."""
    from ..config.architecture import DERIVED

    windows = {w for w in shape.layer_window if w}
    return {
        "window": (windows.pop(), sum(w > 0 for w in shape.layer_window), shape.L) if windows else (0, 0, 1),
        "moe_bias": shape.moe_bias,
        "out_bias": shape.o_bias,
        "mlp_bias": shape.mlp_bias,
        "narrow_v": DERIVED["narrow_v"](shape),
        "swa": DERIVED["swa"](shape),
        "qk_norm": shape.qk_norm != "none",
        "rope": not shape.positions,
    }


# the token dispatchers the step-time model times: Megatron-Core's all-to-all and all-gather ones (Training's) and the
# flex dispatcher's DeepEP and HybridEP backends (megatron-core 0.16.1 transformer/moe/token_dispatcher.py), which
# only the validation of published runs names (benchmarks/throughput.py): mem4d's memory model has no flex buffers
DISPATCHERS = ("alltoall", "allgather", "deepep", "hybridep")
