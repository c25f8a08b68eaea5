"""Mistral 3's vision tower and projector, as transformers 5.25.0 builds them (models/pixtral/modeling_pixtral.py
PixtralVisionModel from Mistral3Config's vision_config, a pixtral; models/mistral3/modeling_mistral3.py
Mistral3MultiModalProjector): each image cut into patches by an unbiased Conv2d, an RMSNorm (ln_pre), depth blocks
(RMSNorm, bidirectional attention with unbiased q, k, v, o and a 2D rotary embedding, RMSNorm, a gated MLP: gate, up,
down, unbiased); the projector normalises the last block's output (an RMSNorm), merges s x s patches into each image
token (the patch merger: one unbiased [s^2 w, w] linear) and projects it into the language model's width (linear_1,
its activation, linear_2; biased where multimodal_projector_bias). Its count (P_v) and what it keeps for backward per
image token (A_v) are declared here once; no sympy. Under sdpa the tower also keeps a block-diagonal mask over all the
patches of a forward (the micro batch's images in one sequence): quadratic, not per image token, so its activations
are refused (rules: "Pixtral's tower: frozen or no image tokens")."""

from __future__ import annotations

from dataclasses import dataclass

from .bounds import MAX_SIZE
from .errors import ConfigError
from .vision_keys import TowerSizes

# PixtralVisionConfig's size keys with their class defaults (configuration_pixtral.py, transformers 5.25.0)
SIZES = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 1024,
    "patch_size": 16,
    "head_dim": 64,
}
# Mistral3Config's vision_config where a file has none (its sub_configs_defaults' init_kwargs): a given vision_config
# takes PixtralVisionConfig's defaults instead
ABSENT = {
    "intermediate_size": 4096,
    "hidden_size": 1024,
    "patch_size": 14,
    "image_size": 1540,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "vocab_size": 32000,
    "head_dim": 64,
    "hidden_act": "gelu",
}
MERGE = 2  # Mistral3Config's spatial_merge_size default: s x s patches merged into one image token
TEXT_WIDTH = 4096  # MistralConfig's hidden_size default (a text_config without one): the projector's output
ACTS = ("silu", "gelu")  # the tower's gated MLP: one saved input either way; the class default is gelu
PROJECTOR_ACTS = ("gelu", "gelu_pytorch_tanh")  # projector_hidden_act (Mistral3Config's default gelu)
# read without changing a tensor, each with why (transformers 5.25.0 modeling_pixtral.py)
HARMLESS = {
    "vocab_size": "not an attribute of PixtralVisionConfig (Mistral3Config's default vision_config sets it): "
    "read by no module"
}
# read at the one value transformers builds, refused at any other: a dropout keeps a mask mem4d does not model; the
# tower is an encoder alone
AT = {"attention_dropout": 0, "is_encoder_decoder": False}


@dataclass(frozen=True)
class PixtralTower(TowerSizes):
    """Mistral 3's vision tower: depth blocks of width w (heads of dh) and gated-MLP width f over patches of c_in
    pixel values, u = s^2 patches merged into each image token, the projector into the language model's width out
    (biased where bias)."""

    dh: int
    u: int
    out: int
    bias: bool
    kind: str = "pixtral"

    @property
    def params(self) -> int:
        """P_v: the patch embedding [c_in, w], ln_pre [w], each block's two RMSNorms, q, k, v, o [w, w], gate and up
        [w, f], down [f, w]; the projector's RMSNorm [w], patch merger [u w, w], linear_1 [w, out] and linear_2
        [out, out] (with their biases where bias)."""
        w, out = self.w, self.out
        block = 2 * w + 4 * w * w + 3 * w * self.f
        return self.c_in * w + w + self.depth * block + w + self.u * w * w + w * out + out * out + 2 * out * self.bias

    @property
    def saved_per_token(self) -> int:
        """A_v's linear part, in bf16 elements (benchmarks/vision_saved_pixtral.py measured it under sdpa): per patch
        (u per token) the Conv2d's input [c_in], the rotary cos and sin [dh each], each RMSNorm's bf16 copy of its
        normalised input and, in a block, its output [w each]; per block q and k after the rotary embedding, v, the
        kernel's output [w each], gate, up, SiLU's output and down's input [f each]; the merger's input [w per
        patch]; per image token linear_1's input [w], its activation's input and output [out each]. Each RMSNorm's
        fp32 input and rstd (w + 1 per row) and the kernel's fp32 logsumexp are fp32 beside it, and the mask is
        quadratic: the tower's activations are refused, this part is what a model of them would start from."""
        w = self.w
        patch = self.c_in + 2 * self.dh + 3 * w + self.depth * (8 * w + 4 * self.f)
        return self.u * patch + w + 2 * self.out


def _fail(path, key: str, why: str) -> ConfigError:
    return ConfigError(f"{path}: key '{key}': {why}")


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_SIZE


def _wrapper(outer: dict, path) -> tuple[int, bool]:
    """The wrapper's keys the projector reads: s (spatial_merge_size), its bias, its GeLU, the last block's output as
    the image features (vision_feature_layer -1, refused at any other: a list concatenates several layers' outputs)."""
    merge = outer.get("spatial_merge_size", MERGE)
    if not _integer(merge):
        raise _fail(path, "spatial_merge_size", f"must be a positive integer up to {MAX_SIZE}, got {merge!r}")
    bias = outer.get("multimodal_projector_bias", False)
    if not isinstance(bias, bool):
        raise _fail(path, "multimodal_projector_bias", f"must be true or false, got {bias!r}")
    if outer.get("projector_hidden_act", PROJECTOR_ACTS[0]) not in PROJECTOR_ACTS:
        raise _fail(
            path,
            "projector_hidden_act",
            f"{outer['projector_hidden_act']!r} is not modelled; mem4d models "
            f"the projector's GeLU ({', '.join(PROJECTOR_ACTS)})",
        )
    layer = outer.get("vision_feature_layer", -1)
    if layer != -1 or isinstance(layer, bool):
        raise _fail(
            path,
            "vision_feature_layer",
            f"{layer!r} is not modelled; mem4d models -1 (the last block's output as the image features)",
        )
    return merge, bias


def read(vision: object, outer: dict, path) -> PixtralTower:
    """A Mistral 3 vision_config as PixtralVisionModel builds it (the class defaults for missing keys) with the
    wrapper's projector into its text_config's hidden_size; a key or value that would change a tensor mem4d does not
    model is refused in one line (the caller sets aside the bookkeeping keys every config class has,
    hfkeys.WHY_HARMLESS)."""
    if not isinstance(vision, dict):
        raise ConfigError(f"{path}: key 'vision_config': must be an object (the vision tower's config)")
    for key in vision:
        if key not in SIZES and key not in HARMLESS and key not in AT and key != "hidden_act":
            raise _fail(
                path,
                f"vision_config.{key}",
                "not a key mem4d knows for Mistral 3's vision tower "
                "(transformers 5.25.0's PixtralVisionConfig): refused rather than ignored",
            )
    for key, value in AT.items():
        if key in vision and (vision[key] != value or isinstance(vision[key], bool) != isinstance(value, bool)):
            raise _fail(path, f"vision_config.{key}", f"{vision[key]!r} is not modelled; mem4d models {value!r}")
    if vision.get("hidden_act", "gelu") not in ACTS:
        raise _fail(
            path,
            "vision_config.hidden_act",
            f"{vision['hidden_act']!r} is not modelled; mem4d models the tower's gated MLP with {', '.join(ACTS)}",
        )
    v = {key: vision.get(key, default) for key, default in SIZES.items()}
    for key, value in v.items():
        if not _integer(value):
            raise _fail(path, f"vision_config.{key}", f"must be a positive integer up to {MAX_SIZE}, got {value!r}")
    if v["hidden_size"] != v["num_attention_heads"] * v["head_dim"]:
        raise _fail(
            path,
            "vision_config.head_dim",
            f"{v['head_dim']} x {v['num_attention_heads']} heads must be the "
            f"width {v['hidden_size']} (the rotary table is built per head_dim, q and k per width / heads)",
        )
    merge, bias = _wrapper(outer, path)
    text = outer.get("text_config")
    out = text.get("hidden_size", TEXT_WIDTH) if isinstance(text, dict) else TEXT_WIDTH
    if not _integer(out):
        raise _fail(path, "text_config.hidden_size", f"must be a positive integer up to {MAX_SIZE}")
    return PixtralTower(
        depth=v["num_hidden_layers"],
        w=v["hidden_size"],
        f=v["intermediate_size"],
        c_in=v["num_channels"] * v["patch_size"] ** 2,
        dh=v["head_dim"],
        u=merge**2,
        out=out,
        bias=bias,
    )
