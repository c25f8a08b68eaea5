"""Llama 4's vision tower and projector, as transformers 5.25.0 builds them (models/llama4/modeling_llama4.py
Llama4VisionModel + Llama4MultiModalProjector; configuration_llama4.py Llama4VisionConfig): each image tile cut into
side x side patches (Llama4UnfoldConvolution: an unbiased linear over num_channels x patch_size^2 pixel values), a
class embedding appended, learned positions for the side^2 + 1 rows, a pre- and a post-LayerNorm around depth blocks
(LayerNorm, bidirectional attention with biased q, k, v, o and a 2D rotary embedding, LayerNorm, a biased two-layer
GeLU MLP); the class row dropped, a pixel shuffle merging k x k patches into one image token, the vision adapter (two
unbiased linears, each followed by a GeLU) and the projector (one unbiased linear into the language model's width).
Its count (P_v) and what it keeps for backward per image token (A_v) are declared here once; no sympy."""

from __future__ import annotations

from dataclasses import dataclass

from .bounds import MAX_SIZE
from .errors import ConfigError
from .vision_keys import TowerSizes, vision_fail, vision_sizes, vit_block

# Llama4VisionConfig's size keys with their class defaults (configuration_llama4.py, transformers 5.25.0)
SIZES = {
    "hidden_size": 768,
    "num_hidden_layers": 34,
    "num_attention_heads": 16,
    "num_channels": 3,
    "intermediate_size": 5632,
    "vision_output_dim": 7680,
    "image_size": 448,
    "patch_size": 14,
    "projector_input_dim": 4096,
    "projector_output_dim": 4096,
}
RATIO = 0.5  # pixel_shuffle_ratio's class default: k = 1 / ratio patches a side merged into one image token
TEXT_WIDTH = 5120  # Llama4TextConfig's hidden_size default: the projector's output width
# read without changing a tensor, each with why (transformers 5.25.0 modeling_llama4.py)
HARMLESS = {
    "hidden_act": "Llama4VisionMLP and Llama4VisionMLP2 build nn.GELU() whatever it names (ACT2FN is commented out)",
    "norm_eps": "the LayerNorms' epsilon: the same tensors",
    "rope_parameters": "the 2D rotary table's base: a buffer of (side^2 + 1) x head_dim / 2 complex values computed "
    "once at build (0.2 MB for Llama-4-Scout), no parameter, nothing kept per image",
    "vision_feature_select_strategy": "read by neither Llama4VisionModel nor the projector",
    "vision_feature_layer": "not an attribute of Llama4VisionConfig and read by no module",
}
# read at the one value transformers builds, refused at any other: a dropout keeps a mask for backward mem4d does not
# model; the projector's linear_1 is built with bias=False whatever multi_modal_projector_bias says; the tower is an
# encoder alone
AT = {"attention_dropout": 0, "projector_dropout": 0, "multi_modal_projector_bias": False, "is_encoder_decoder": False}


@dataclass(frozen=True)
class Llama4Tower(TowerSizes):
    """Llama 4's vision tower: depth blocks of width w and MLP width f over side x side patches of c_in pixel values
    per tile (+ the class row), k x k patches shuffled into each image token, the adapter's widths a_in and a_out,
    the projector into the language model's width out."""

    side: int
    k: int
    a_in: int
    a_out: int
    out: int
    kind: str = "llama4"

    @property
    def params(self) -> int:
        """P_v: the patch embedding [c_in, w], the class embedding [w], positions [side^2 + 1, w], the pre- and
        post-LayerNorms, each block's two LayerNorms, q, k, v, o [w, w] with biases, fc1 [w, f] and fc2 [f, w] with
        biases; the adapter's fc1 [f, a_in] and fc2 [a_out, a_out], the projector [a_out, out] (no biases)."""
        w, f = self.w, self.f
        block = vit_block(w, f)
        return (
            self.c_in * w
            + w
            + (self.side**2 + 1) * w
            + 2 * 2 * w
            + self.depth * block
            + f * self.a_in
            + self.a_out * self.a_out
            + self.a_out * self.out
        )

    @property
    def tokens_per_tile(self) -> int:
        """Image tokens a tile becomes: its side^2 patches, k^2 to a token."""
        return self.side**2 // self.k**2

    @property
    def saved_per_token(self) -> float:
        """A_v: elements kept for backward per image token, as autograd keeps them under transformers' default "sdpa"
        attention (benchmarks/vision_saved_llama4.py measured it): per tile the patch embedding's input [c_in per
        patch]; per row (side^2 + 1, the class row included) the pre- and post-LayerNorms' inputs [w each] and per
        block the inputs of both LayerNorms and of q/k/v (the first's output) and fc1 (the second's) [w each], the
        kernel's q and k after the rotary embedding, v and its output, which o reads in place [w each], GeLU's and
        fc2's inputs [f each]; per image token the shuffled patches (fc1's input) [f], each adapter GeLU's input and
        output [a_in, a_out each]. A tile's total over its image tokens: not an integer, for the class row. The
        LayerNorms' mean and rstd (2 per row) and the kernel's fp32 logsumexp (a value per row and head) are under
        0.1 % at real widths and left out."""
        rows = self.side**2 + 1
        tile = self.side**2 * self.c_in + rows * (2 * self.w + self.depth * (8 * self.w + 2 * self.f))
        return tile / self.tokens_per_tile + self.f + 2 * self.a_in + 2 * self.a_out


def _shuffle(vision: dict, side: int, path) -> int:
    """k, the patches a side merged into one image token: pixel_shuffle_ratio must be 1 / k with k dividing side."""
    ratio = vision.get("pixel_shuffle_ratio", RATIO)
    if (
        isinstance(ratio, bool)
        or not isinstance(ratio, (int, float))
        or not 0 < ratio <= 1
        or abs(1 / ratio - round(1 / ratio)) > 1e-9
        or side % round(1 / ratio)
    ):
        raise vision_fail(
            path,
            "pixel_shuffle_ratio",
            f"must be 1 / k for a whole k dividing the {side} patches a side "
            f"(pixel_shuffle reshapes the patch grid by it), got {ratio!r}",
        )
    return round(1 / ratio)


def _chained(v: dict, k: int, path) -> None:
    """The widths forward chains: the adapter's fc1 reads the shuffled patches, fc2 reads fc1's output, the projector
    reads fc2's; the rotary embedding splits each head into four (x and y, cos and sin)."""
    if v["intermediate_size"] != v["hidden_size"] * k * k:
        raise vision_fail(
            path,
            "intermediate_size",
            f"must be hidden_size x {k}^2 = {v['hidden_size'] * k * k} (the "
            "vision adapter's fc1 reads the pixel-shuffled patches at this width)",
        )
    for key, other in (("projector_input_dim", "projector_output_dim"), ("vision_output_dim", "projector_output_dim")):
        if v[key] != v[other]:
            raise vision_fail(
                path,
                key,
                f"{v[key]} must be {other} {v[other]} (the adapter's fc2 is [{other}, {other}] "
                "and the projector reads its output)",
            )
    heads = v["num_attention_heads"]
    if v["hidden_size"] % heads or (v["hidden_size"] // heads) % 4:
        raise vision_fail(
            path,
            "num_attention_heads",
            f"{heads} heads must split the width {v['hidden_size']} into heads "
            "of a multiple of 4 (the 2D rotary embedding's quarters)",
        )


def read(vision: object, text: dict, path) -> Llama4Tower:
    """A Llama 4 vision_config as Llama4VisionModel builds it (the class defaults for missing keys), its projector
    into text's hidden_size; a key or value that would change a tensor mem4d does not model is refused in one line
    (the caller sets aside the bookkeeping keys every config class has: hfkeys.WHY_HARMLESS)."""
    if not isinstance(vision, dict):
        raise ConfigError(f"{path}: key 'vision_config': must be an object (the vision tower's config)")
    for key in vision:
        if key not in SIZES and key != "pixel_shuffle_ratio" and key not in HARMLESS and key not in AT:
            raise vision_fail(
                path,
                key,
                "not a key mem4d knows for Llama 4's vision tower (transformers 5.25.0's "
                "Llama4VisionConfig): refused rather than ignored",
            )
    for key, value in AT.items():
        if key in vision and (vision[key] != value or isinstance(vision[key], bool) != isinstance(value, bool)):
            raise vision_fail(
                path,
                key,
                f"{vision[key]!r} is not modelled; mem4d models {value!r} (transformers 5.25.0 "
                "builds the tower with it)",
            )
    v = vision_sizes(vision, SIZES, path)
    out = text.get("hidden_size", TEXT_WIDTH)
    if isinstance(out, bool) or not isinstance(out, int) or not 0 < out <= MAX_SIZE:
        raise ConfigError(f"{path}: key 'text_config.hidden_size': must be a positive integer up to {MAX_SIZE}")
    side = v["image_size"] // v["patch_size"]
    if side == 0:
        raise vision_fail(path, "patch_size", f"{v['patch_size']} must be at most image_size {v['image_size']}")
    k = _shuffle(vision, side, path)
    _chained(v, k, path)
    return Llama4Tower(
        depth=v["num_hidden_layers"],
        w=v["hidden_size"],
        f=v["intermediate_size"],
        c_in=v["num_channels"] * v["patch_size"] ** 2,
        side=side,
        k=k,
        a_in=v["projector_input_dim"],
        a_out=v["projector_output_dim"],
        out=out,
    )
