"""Model shape: a frozen config shared by symbolic/ and jaxcheck/, and its presets (config.json files: hfconfig)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from .bounds import MAX_SIZE, positive as _positive  # noqa: F401  (MAX_SIZE: hfkeys reads it here)
from .choices import one_of
from .counts import ParameterCounts
from .blocks import check_blocks
from .errors import ConfigError
from .experts import check_experts, check_routing
from .features import CHOICES, Features
from .gemma4 import check_gemma4
from .hybrid import check_hybrid
from .layer_kinds import LayerKinds
from .latent import check_latent
from .swa import check_swa


@dataclass(frozen=True)
class ModelShape(Features, ParameterCounts, LayerKinds):
    """A Llama-family decoder: RMSNorm, RoPE, GQA attention of a heads dh wide, and in each layer a SwiGLU MLP of
    width f or a mixture of experts (E routed SwiGLU experts of width f_e, k_e per token, shared experts of width f_s
    in all); untied LM head by default. A GPT-style model (Megatron-LM's GPT, Korthikanti et al. 2022) sets mlp gelu,
    norm layer, its learned absolute position embeddings s_p and dropout. Its fields are features.Features (each
    declared there once: default, doc, letter, config.json keys, rule reads); here its checks and presets."""

    def __post_init__(self):
        for name in ("h", "f", "a", "k", "L", "v"):
            _positive(self.name, name, getattr(self, name))
        for name in ("E", "k_e", "f_e", "f_s"):
            _positive(self.name, name, getattr(self, name), zero=True)
        if self.head_dim is None:
            if self.h % self.a:
                raise ConfigError(f"model {self.name!r}: hidden size h={self.h} is not divisible by heads a={self.a}")
            object.__setattr__(self, "head_dim", self.h // self.a)
        else:
            _positive(self.name, "head_dim", self.head_dim)
        if self.a % self.k:
            raise ConfigError(f"model {self.name!r}: heads a={self.a} are not divisible by KV heads k={self.k}")
        _positive(self.name, "positions", self.positions, zero=True)
        check_latent(self)
        if (
            (self.sandwich or self.logit_softcap or self.attn_softcap)
            and (self.E or self.mla or self.mtp)
            and not self.g_dh
        ):
            raise ConfigError(
                f"model {self.name!r}: sandwich norms and soft-capping are modelled for dense GQA "
                "models (Gemma 2 and 3)"
            )
        check_routing(self)
        check_hybrid(self)
        check_swa(self)
        check_blocks(self)
        check_gemma4(self)
        for name, allowed in CHOICES.items():  # Architecture takes these as checked here
            one_of(f"model {self.name!r}: {name}", getattr(self, name), allowed)
        check_experts(self)

    @property
    def dh(self) -> int:
        """Per-head width: head_dim, h/a unless a config says otherwise."""
        return self.head_dim

    @property
    def mla(self) -> bool:
        """Whether attention is multi-head latent attention (kv_lora > 0)."""
        return self.kv_lora > 0

    @property
    def dsa(self) -> bool:
        """Whether every layer has DeepSeek Sparse Attention's lightning indexer (index_heads > 0)."""
        return self.index_heads > 0

    def as_dict(self) -> dict:
        return {
            fl.name: list(value)
            if isinstance(value := getattr(self, fl.name), tuple)
            else value.as_dict()
            if fl.name == "vision"
            else value
            for fl in fields(self)
            if fl.name != "vision" or self.vision
        }


# a GPT's layers (Megatron-LM's GPT, GPT-2): GeLU MLP, LayerNorm, biases on every projection, dropout, tied head
GPT_STYLE = {
    "tied": True,
    "qkv_bias": True,
    "o_bias": True,
    "mlp_bias": True,
    "mlp": "gelu",
    "norm": "layer",
    "dropout": True,
}

PRESETS: dict[str, ModelShape] = {
    shape.name: shape
    for shape in (
        # a few million parameters; a, k, L divisible by 4 and all sizes distinct, so swapped symbols show
        ModelShape("tiny", h=256, f=688, a=16, k=4, L=8, v=1024),
        ModelShape("llama2-7b", h=4096, f=11008, a=32, k=32, L=32, v=32000),
        ModelShape("llama2-13b", h=5120, f=13824, a=40, k=40, L=40, v=32000),
        ModelShape("llama2-70b", h=8192, f=28672, a=64, k=8, L=80, v=32000),
        ModelShape("llama3-8b", h=4096, f=14336, a=32, k=8, L=32, v=128256),
        ModelShape("llama3-70b", h=8192, f=28672, a=64, k=8, L=80, v=128256),
        ModelShape("llama3.1-405b", h=16384, f=53248, a=128, k=8, L=126, v=128256),
        # GPT-style (GeLU MLP, LayerNorm, learned positions, biases, dropout 0.1, tied): GPT-2 small as released
        # (openai-community/gpt2: 124,439,808 parameters) and GPT-3 175B as Korthikanti et al. 2022 train it
        ModelShape("gpt2", h=768, f=3072, a=12, k=12, L=12, v=50257, positions=1024, **GPT_STYLE),
        ModelShape("gpt3-175b", h=12288, f=49152, a=96, k=96, L=96, v=51200, positions=2048, **GPT_STYLE),
        # a tiny mixture of experts: 8 experts, top 2, a shared expert, sizes distinct from tiny's
        ModelShape("tiny-moe", h=256, f=688, a=16, k=4, L=8, v=1024, E=8, k_e=2, f_e=176, f_s=352),
        # mixtures of experts, shapes of the published config.json files (grids/models/published/)
        ModelShape("mixtral-8x7b", h=4096, f=14336, a=32, k=8, L=32, v=32000, E=8, k_e=2, f_e=14336),
        ModelShape("mixtral-8x22b", h=6144, f=16384, a=48, k=8, L=56, v=32000, E=8, k_e=2, f_e=16384),
        ModelShape("olmoe-1b-7b", h=2048, f=1024, a=16, k=16, L=16, v=50304, E=64, k_e=8, f_e=1024, qk_norm="full"),
        ModelShape(
            "qwen3-30b-a3b",
            h=2048,
            f=6144,
            a=32,
            k=4,
            L=48,
            v=151936,
            head_dim=128,
            E=128,
            k_e=8,
            f_e=768,
            qk_norm="head",
        ),
        ModelShape(
            "qwen3-235b-a22b",
            h=4096,
            f=12288,
            a=64,
            k=4,
            L=94,
            v=151936,
            head_dim=128,
            E=128,
            k_e=8,
            f_e=1536,
            qk_norm="head",
        ),
    )
}

DEFAULT_MODEL = "llama3-8b"  # what every command models when --model is not given
