"""Gemma 3's vision tower and projector, as transformers 5.25.0 builds them (models/siglip/modeling_siglip.py
SiglipVisionModel from Gemma3Config's vision_config, a siglip_vision_model; models/gemma3/modeling_gemma3.py
Gemma3MultiModalProjector): each image cut into side x side patches by a biased Conv2d, learned positions for them,
depth pre-LayerNorm blocks (LayerNorm, bidirectional attention with biased q, k, v, out, LayerNorm, a biased
two-layer GeLU MLP), a post-LayerNorm; the projector average-pools k x k patches into each image token, normalises it
(an RMSNorm of the tower's width) and projects it into the language model's width (one unbiased matrix). Its count
(P_v) and what it keeps for backward per image token (A_v) are declared here once; no sympy."""

from __future__ import annotations

from dataclasses import dataclass

from .bounds import MAX_SIZE
from .errors import ConfigError
from .vision_keys import TowerSizes, vision_fail, vision_sizes, vit_block

# SiglipVisionConfig's size keys with their class defaults (configuration_siglip.py, transformers 5.25.0)
SIZES = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 16,
}
TOKENS = 256  # Gemma3Config's mm_tokens_per_image default: the image tokens an image is pooled into
TEXT_WIDTH = 2304  # Gemma3TextConfig's hidden_size default: the projector's output width
# read without changing a tensor, each with why (transformers 5.25.0 modeling_siglip.py)
HARMLESS = {"layer_norm_eps": "the LayerNorms' epsilon (and the projector's RMSNorm's): the same tensors"}
# read at the one value mem4d models, refused at any other: a dropout keeps a mask for backward mem4d does not model;
# the pooling head (SiglipMultiheadAttentionPoolingHead) Gemma 3's published files leave out; the tower is an encoder
AT = {"attention_dropout": 0, "vision_use_head": False, "is_encoder_decoder": False}
HEAD = True  # SiglipVisionConfig's vision_use_head default: a file that leaves the key out builds the head (refused)


@dataclass(frozen=True)
class Gemma3Tower(TowerSizes):
    """Gemma 3's vision tower: depth blocks of width w and MLP width f over side x side patches of c_in pixel values
    per image, k x k patches pooled into each image token, the projector into the language model's width out."""

    side: int
    k: int
    out: int
    kind: str = "gemma3"

    @property
    def params(self) -> int:
        """P_v: the patch embedding (Conv2d [c_in, w] and its bias), positions [side^2, w], each block's two
        LayerNorms, q, k, v, out [w, w] with biases, fc1 [w, f] and fc2 [f, w] with biases, the post-LayerNorm; the
        projector's RMSNorm [w] and matrix [w, out]."""
        w, f = self.w, self.f
        block = vit_block(w, f)
        return self.c_in * w + w + self.side**2 * w + self.depth * block + 2 * w + w + w * self.out

    @property
    def tokens_per_image(self) -> int:
        """Image tokens an image becomes: its side^2 patches, k^2 pooled to a token."""
        return (self.side // self.k) ** 2

    @property
    def saved_per_token(self) -> int:
        """A_v: elements kept for backward per image token, as autograd keeps them under transformers' default "sdpa"
        attention (benchmarks/vision_saved_gemma3.py measured it): per patch (k^2 per token) the Conv2d's input
        [c_in], per block the inputs of both LayerNorms and of q/k/v (the first's output) and fc1 (the second's) [w
        each], the kernel's q, k, v and its output, which out reads in place [w each], GeLU's and fc2's inputs [f
        each], the post-LayerNorm's input and the pooling's input (a contiguous copy of its output) [w each]; per
        image token the projector's matrix input [w]. The LayerNorms' mean and rstd (2 per row), the kernel's fp32
        logsumexp (a value per row and head) and the RMSNorm's fp32 input, output and rstd (2w + 1 per token) are
        under 0.1 % at real widths and left out."""
        w = self.w
        return self.k**2 * (self.c_in + self.depth * (8 * w + 2 * self.f) + 2 * w) + w


def _pool(tokens: object, side: int, path) -> int:
    """k, the patches a side pooled into one image token: mm_tokens_per_image must be t^2 with t dividing side
    (Gemma3MultiModalProjector's AvgPool2d of kernel side // t then gives t x t tokens)."""
    t = round(tokens**0.5) if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else 0
    if t == 0 or t * t != tokens or side % t:
        raise ConfigError(
            f"{path}: key 'mm_tokens_per_image': must be t^2 for a whole t dividing the {side} patches "
            f"a side (the projector pools the patch grid to t x t), got {tokens!r}"
        )
    return side // t


def read(vision: object, outer: dict, path) -> Gemma3Tower:
    """A Gemma 3 vision_config as SiglipVisionModel builds it (the class defaults for missing keys), pooled to the
    wrapper's mm_tokens_per_image and projected into its text_config's hidden_size; a key or value that would change
    a tensor mem4d does not model is refused in one line (the caller sets aside the bookkeeping keys every config
    class has, hfkeys.WHY_HARMLESS, and checks hidden_act)."""
    if not isinstance(vision, dict):
        raise ConfigError(f"{path}: key 'vision_config': must be an object (the vision tower's config)")
    for key in vision:
        if key not in SIZES and key not in HARMLESS and key not in AT and key != "hidden_act":
            raise vision_fail(
                path,
                key,
                "not a key mem4d knows for Gemma 3's vision tower (transformers 5.25.0's "
                "SiglipVisionConfig): refused rather than ignored",
            )
    for key, value in AT.items():
        given = vision.get(key, HEAD if key == "vision_use_head" else value)
        if given != value or isinstance(given, bool) != isinstance(value, bool):
            raise vision_fail(
                path,
                key,
                f"{given!r} is not modelled; mem4d models {value!r} (Gemma 3's published tower)"
                + (" (SiglipVisionConfig's default is true)" if key == "vision_use_head" else ""),
            )
    v = vision_sizes(vision, SIZES, path)
    text = outer.get("text_config")
    out = text.get("hidden_size", TEXT_WIDTH) if isinstance(text, dict) else TEXT_WIDTH
    if isinstance(out, bool) or not isinstance(out, int) or not 0 < out <= MAX_SIZE:
        raise ConfigError(f"{path}: key 'text_config.hidden_size': must be a positive integer up to {MAX_SIZE}")
    if v["hidden_size"] % v["num_attention_heads"]:
        raise vision_fail(
            path, "num_attention_heads", f"{v['num_attention_heads']} heads do not divide the width {v['hidden_size']}"
        )
    side = v["image_size"] // v["patch_size"]
    if side == 0:
        raise vision_fail(path, "patch_size", f"{v['patch_size']} must be at most image_size {v['image_size']}")
    k = _pool(outer.get("mm_tokens_per_image", TOKENS), side, path)
    return Gemma3Tower(
        depth=v["num_hidden_layers"],
        w=v["hidden_size"],
        f=v["intermediate_size"],
        c_in=v["num_channels"] * v["patch_size"] ** 2,
        side=side,
        k=k,
        out=out,
    )
