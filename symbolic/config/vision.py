"""A multimodal checkpoint's vision tower and projector: Llama 4's in vision_llama4.py; here, as transformers 5.25.0
builds Qwen3-VL's and Qwen3.5's
(models/qwen3_vl/modeling_qwen3_vl.py Qwen3VLVisionModel; qwen3_5/modular_qwen3_5.py Qwen3_5VisionModel drops the
deepstack mergers): a Conv3d patch embedding, learned positions, depth pre-LayerNorm blocks (bidirectional attention
with a biased qkv and proj, a biased two-layer GeLU MLP), the merger (the projector into the language model) and one
deepstack merger per deepstack index. Its count (P_v) and what it keeps for backward per image token (A_v) are
declared here once; no sympy."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError
from .vision_keys import TowerSizes, vision_sizes, vit_block
from . import vision_gemma3, vision_llama4, vision_pixtral
from .vision_gemma3 import Gemma3Tower
from .vision_llama4 import Llama4Tower
from .vision_pixtral import PixtralTower

# the vision_config keys of Qwen3VLVisionConfig / Qwen3_5VisionConfig (configuration_qwen3_vl.py,
# configuration_qwen3_5.py, transformers 5.25.0) with their class defaults; num_heads splits the width into heads and
# changes no parameter and no saved tensor's size (it must divide the width)
DEFAULTS = {
    "depth": 27,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 3584,
    "num_position_embeddings": 2304,
}
# read without changing a tensor: the initializer's spread; the 2D rotary embedding's settings (no parameter: its
# cos/sin [n, dh] are computed once per step, under 0.1 % of the tower's saved bytes); the class's own name
HARMLESS = ("initializer_range", "rope_parameters", "model_type")
# the class's attribute_map: a file may name depth and num_heads by the library's common names
ALIASES = {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"}
AT = {"is_encoder_decoder": False}  # read at the one value transformers builds (the tower is an encoder alone)
DEEPSTACK_INDEXES = [8, 16, 24]  # Qwen3VLVisionConfig's deepstack_visual_indexes default
ACTS = ("gelu_pytorch_tanh", "gelu")  # GeLU (tanh or erf): one saved input either way
DEEPSTACK = {
    "qwen3_vl": True,
    "qwen3_vl_moe": True,
    "qwen3_5": False,
    "qwen3_5_moe": False,
}  # Qwen wrapper -> deepstack
TOWERS = (*DEEPSTACK, "llama4", "gemma3", "mistral3")  # the wrappers whose tower mem4d models
OWN = {
    "gemma3": ("mm_tokens_per_image",),  # a wrapper's own keys its tower reads (beside hfconfig.WRAPPER_KEYS)
    "mistral3": ("spatial_merge_size", "multimodal_projector_bias", "projector_hidden_act", "vision_feature_layer"),
}
# the vision_config's model_type where the wrapper's class builds whatever it names (an AutoConfig)
KIND = {"gemma3": "siglip_vision_model", "mistral3": "pixtral"}
ABSENT = {"mistral3": vision_pixtral.ABSENT}  # a wrapper's vision_config where its file has none, if not the class's


@dataclass(frozen=True)
class VisionTower(TowerSizes):
    """Qwen3-VL's vision tower: depth blocks of width w and MLP width f over patches of c_in pixels values
    (in_channels x temporal_patch_size x patch_size^2), u = spatial_merge_size^2 patches merged into each image token
    of width out, n_pos learned positions, n_ds deepstack mergers."""

    u: int
    out: int
    n_pos: int
    n_ds: int

    @property
    def params(self) -> int:
        """P_v: the patch embedding (Conv3d weight and bias), positions, each block's two LayerNorms, qkv [w, 3w] and
        proj [w, w] with biases, fc1 [w, f] and fc2 [f, w] with biases; the merger (a LayerNorm of w, fc1 [uw, uw],
        fc2 [uw, out], biased) and each deepstack merger (its LayerNorm over uw after the shuffle)."""
        w, f, m = self.w, self.f, self.u * self.w
        block = vit_block(w, f)
        fcs = (m * m + m) + (m * self.out + self.out)
        return self.c_in * w + w + self.n_pos * w + self.depth * block + 2 * w + fcs + self.n_ds * (2 * m + fcs)

    @property
    def saved_per_token(self) -> int:
        """A_v: elements the tower keeps for backward per image token (u patches), as autograd keeps them under
        transformers' default "sdpa" attention (benchmarks/vision_saved.py measured it): per block and patch the
        inputs of norm1, qkv, norm2 and fc1 [w each], q and k after the rotary embedding [w each], v a view that
        keeps qkv's whole output [3w], the kernel's output and proj's input, its concatenated copy [w each], GeLU's and
        fc2's inputs [f each]; the Conv3d's input [c_in]; the last block's output (the merger's norm input) [w]; each
        merger's fc1, GeLU and fc2 inputs ([w] per patch each). LayerNorm's mean and rstd (2 per row), the rotary
        cos and sin and the position indices are under 1 % at real widths and left out."""
        return self.u * (self.depth * (11 * self.w + 2 * self.f) + self.c_in + self.w + 3 * self.w * (1 + self.n_ds))


Tower = VisionTower | Llama4Tower | Gemma3Tower | PixtralTower


def of_json(fields: dict) -> Tower:
    """A tower as its as_dict wrote it (a --json "shape"'s vision): Llama 4's, Gemma 3's and Pixtral's name their
    kind."""
    kinds = {"llama4": Llama4Tower, "gemma3": Gemma3Tower, "pixtral": PixtralTower}
    return kinds.get(fields.get("kind"), VisionTower)(**fields)


def _resolved(vision: dict, path) -> dict:
    """vision with each alias under the attribute it names (given both, they must agree) and the keys read at one
    value set aside (refused at any other)."""
    out = {key: value for key, value in vision.items() if key not in AT}
    for key, value in AT.items():
        if key in vision and (vision[key] is not value):
            raise ConfigError(
                f"{path}: key 'vision_config.{key}': {vision[key]!r} is not modelled; mem4d models "
                f"{value!r} (transformers 5.25.0 builds the tower with it)"
            )
    for alias, name in ALIASES.items():
        if alias in out:
            if name in out and out[name] != out[alias]:
                raise ConfigError(
                    f"{path}: key 'vision_config.{alias}' (transformers' alias of {name!r}) disagrees with {name!r}"
                )
            out[name] = out.pop(alias)
    return out


def _gelu(vision: dict, path) -> None:
    """The tower's MLP activation: a GeLU (one saved input), refused otherwise."""
    if vision.get("hidden_act", ACTS[0]) not in ACTS:
        raise ConfigError(
            f"{path}: key 'vision_config.hidden_act': {vision['hidden_act']!r} is not modelled; mem4d "
            f"models the tower's GeLU ({', '.join(ACTS)})"
        )


def read(vision: object, wrapper: str, text: dict, path, outer: dict | None = None) -> Tower:
    """A wrapper's vision_config as transformers builds its tower (Llama 4's: vision_llama4.read, its projector into
    text's width; Gemma 3's and Mistral 3's: vision_gemma3.read, vision_pixtral.read, as the wrapper outer says); a
    key or value that would change a tensor mem4d does not model is refused in one line."""
    if wrapper == "llama4":
        return vision_llama4.read(vision, text, path)
    if wrapper == "mistral3":
        return vision_pixtral.read(vision, outer if outer is not None else {"text_config": text}, path)
    if not isinstance(vision, dict):
        raise ConfigError(f"{path}: key 'vision_config': must be an object (the vision tower's config)")
    _gelu(vision, path)
    if wrapper == "gemma3":
        return vision_gemma3.read(vision, outer if outer is not None else {"text_config": text}, path)
    deepstack = DEEPSTACK[wrapper]
    known = (*DEFAULTS, *HARMLESS, "hidden_act", *(("deepstack_visual_indexes",) if deepstack else ()))
    vision = _resolved(vision, path)
    for key in vision:
        if key not in known and not (key == "deepstack_visual_indexes" and not vision[key]):
            raise ConfigError(
                f"{path}: key 'vision_config.{key}': not a key mem4d knows for {wrapper}'s vision "
                "tower (transformers 5.25.0's vision config class): refused rather than ignored"
            )
    values = vision_sizes(vision, DEFAULTS, path)
    if values["hidden_size"] % values["num_heads"]:
        raise ConfigError(
            f"{path}: key 'vision_config.num_heads': {values['num_heads']} heads do not divide the "
            f"width {values['hidden_size']}"
        )
    indexes = vision.get("deepstack_visual_indexes", DEEPSTACK_INDEXES if deepstack else [])
    if (
        not isinstance(indexes, list)
        or not all(isinstance(i, int) and 0 <= i < values["depth"] for i in indexes)
        or len(set(indexes)) != len(indexes)
    ):
        raise ConfigError(
            f"{path}: key 'vision_config.deepstack_visual_indexes': must list distinct block indices "
            f"below depth {values['depth']}"
        )
    return VisionTower(
        depth=values["depth"],
        w=values["hidden_size"],
        f=values["intermediate_size"],
        c_in=values["in_channels"] * values["temporal_patch_size"] * values["patch_size"] ** 2,
        u=values["spatial_merge_size"] ** 2,
        out=values["out_hidden_size"],
        n_pos=values["num_position_embeddings"],
        n_ds=len(indexes),
    )
