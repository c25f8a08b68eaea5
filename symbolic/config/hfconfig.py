"""Where a --model value comes from: a preset, or a Hugging Face config.json read as a ModelShape, safely: every key is read into the shape, known not to change what
training allocates, or refused with one line naming it and what mem4d models (a ConfigError: exit 2). Nothing is
ignored, so a model mem4d does not describe is never counted as if it were a dense Llama."""

from __future__ import annotations

import sys
from pathlib import Path

from . import storage, vision
from .errors import ConfigError
from .families import FAMILIES, SUPPORTED, aliases
from .families.deepseek import MLA
from .families.multimodal import WRAPPERS
from .hfjson import load
from .hfkeys import HARMLESS, HARMLESS_VALUES, ONLY, VALUES, Family, Reader
from .shapes import PRESETS, ModelShape


STORAGE = "quantization_config"  # how the checkpoint is stored (symbolic/config/storage.py), not what training holds
# a Qwen3-VL / Qwen3.5 / Llama 4 wrapper's own keys: its two configs, the head's tie, the special tokens' ids
WRAPPER_KEYS = (
    "model_type",
    "text_config",
    "vision_config",
    "tie_word_embeddings",
    "image_token_id",
    "video_token_id",
    "vision_start_token_id",
    "vision_end_token_id",
    "_name_or_path",
    "boi_token_index",
    "eoi_token_index",
    "image_token_index",
    "boi_token_id",
    "eoi_token_id",
)


def _family(raw: dict, r: Reader) -> Family:
    """The config's family by model_type (a config without one is refused), after the refusals that name
    what a config is better than its model_type: a nested text model, multi-head latent attention."""
    if "text_config" in raw:
        raise r.fail(
            "text_config",
            "a multimodal checkpoint: its vision tower is not modelled; pass --text-only to "
            "count its language model alone",
        )
    kind = raw.get("model_type")
    if kind is None:  # read as a Llama before: a silent guess at the architecture
        raise ConfigError(
            f"{r.path}: no 'model_type' key: mem4d reads a config by its architecture and does not "
            f"guess one; add the model_type of its checkpoint (one of {SUPPORTED})"
        )
    if not isinstance(kind, str):
        raise r.fail("model_type", "must be a string naming the architecture")
    mla_families = [name for name, family in FAMILIES.items() if "kv_lora_rank" in family.keys]
    for key in MLA if kind not in mla_families + ["mimo_v2_flash"] else ():
        if raw.get(key) is not None:
            raise r.fail(
                key,
                f"multi-head latent attention in a model_type {kind!r} config is not modelled; mem4d "
                f"reads it for model_type {', '.join(mla_families)}",
            )
    if kind not in FAMILIES:
        raise r.fail("model_type", f"this architecture is not modelled; mem4d models model_type {SUPPORTED}")
    return FAMILIES[kind]


def _check_keys(raw: dict, family: Family, r: Reader) -> None:
    """Every key is read by the family, harmless, or refused: a value mem4d does not model is refused naming it;
    keys mem4d does not know are named all at once (one line), so one run lists what a file needs."""
    unknown = []
    for key, value in raw.items():
        if key == STORAGE:  # read by storage.read, for every family
            continue
        rule = (
            ((family.values or {}).get(key) or VALUES.get(key) if key in family.keys else None)
            or ONLY.get(key)
            or HARMLESS_VALUES.get(key)
        )
        if rule is not None and not rule.allowed(value):
            raise r.fail(key, f"not modelled; mem4d models {rule.supports}")
        if rule is None and key not in family.keys and key not in HARMLESS:
            unknown.append(key)
    if len(unknown) == 1:
        raise r.fail(
            unknown[0],
            f"not a key mem4d knows for model_type {raw.get('model_type', 'llama')!r} "
            f"({family.about}): it may change what is allocated, so it is refused rather than ignored",
        )
    if unknown:
        shown = ", ".join(repr(key) for key in unknown[:12]) + (
            f" and {len(unknown) - 12} more" if unknown[12:] else ""
        )
        raise ConfigError(
            f"{r.path}: {len(unknown)} keys mem4d does not know for model_type "
            f"{raw.get('model_type', 'llama')!r} ({family.about}): {shown}; each may change what is "
            "allocated, so they are refused rather than ignored"
        )


def _text_model(raw: dict, r: Reader) -> dict:
    """A multimodal config's language model (--text-only): its text_config, read as a config.json of the text
    model's own model_type, with the LM head tied as the outer config ties it (families.multimodal)."""
    kind = raw.get("model_type")
    if not isinstance(kind, str) or kind not in WRAPPERS:
        raise r.fail(
            "model_type",
            f"a multimodal checkpoint mem4d does not know; --text-only reads model_type {', '.join(WRAPPERS)}",
        )
    text = raw["text_config"]
    if not isinstance(text, dict):
        raise r.fail("text_config", "must be an object (the language model's config)")
    wrapper = WRAPPERS[kind]
    tied = raw.get("tie_word_embeddings", wrapper.tied)
    if not isinstance(tied, bool) or text.get("tie_word_embeddings", tied) != tied:
        raise r.fail(
            "tie_word_embeddings", "must be true or false, and agree with text_config's (the outer one ties the head)"
        )
    text = {
        **text,
        "model_type": {"kimi_k2": "deepseek_v3"}.get(text.get("model_type"), text.get("model_type")) or wrapper.text,
        "tie_word_embeddings": tied,
    }
    if "_name_or_path" in raw:
        text["_name_or_path"] = raw["_name_or_path"]
    return text


def read(path: str | Path, text_only: bool = False) -> ModelShape:
    """The ModelShape of a config.json; a key mem4d neither models nor knows to be harmless is a one-line ConfigError.
    text_only: a multimodal config's language model alone (refused without it)."""
    return read_noted(path, text_only)[0]


def read_noted(path: str | Path, text_only: bool = False) -> tuple[ModelShape, str | None]:
    """read's ModelShape and the one line naming how the checkpoint is stored where that is not what training holds
    (a quantization_config's packing and scales: storage.read), else None."""
    path = Path(path)
    raw = load(path)
    note = storage.read(raw.get(STORAGE), path)
    r = Reader(raw, path)
    tower, outer = None, raw
    if "text_config" in raw:
        tower = None if text_only else _tower(raw, r)
        raw = _text_model(raw, r)
        r = Reader(raw, path)
        note = storage.read(raw.get(STORAGE), path) or note  # a text_config's own quantization_config
    elif text_only:
        raise ConfigError(f"{path}: --text-only reads a multimodal config's text_config, and this file has none")
    family = _family(raw, r)
    raw = aliases.resolve(raw, raw.get("model_type", "llama"), family.keys, path)
    r = Reader(raw, path)
    _check_keys(raw, family, r)
    r.defaults = family.defaults or {}
    if family.letters is not None:
        values = family.letters(r)
    else:
        values = {"h": r.count("hidden_size"), "f": r.count("intermediate_size"), "a": r.count("num_attention_heads")}
        values.update(
            k=r.count("num_key_value_heads", values["a"]),
            L=r.count("num_hidden_layers"),
            v=r.count("vocab_size"),
            tied=r.flag("tie_word_embeddings"),
            head_dim=r.count("head_dim", 0) or None,
        )
    shape = ModelShape(name=_name(outer, path), **{**values, **family.build(raw, r)}, vision=tower)  # a build sets f
    if tower is not None and tower.out != shape.h:
        raise r.fail(
            "vision_config",
            f"out_hidden_size {tower.out} must be the language model's hidden size {shape.h} "
            "(the merger's output replaces image tokens' embeddings)",
        )
    return shape, note


def _tower(raw: dict, r: Reader) -> vision.Tower:
    """A multimodal config's vision tower (config.vision), where mem4d models its kind; else refused in one line
    (--text-only counts the language model alone). The wrapper's other keys are token ids, harmless."""
    kind = raw.get("model_type")
    if kind not in vision.TOWERS:
        about = WRAPPERS[kind].about if isinstance(kind, str) and kind in WRAPPERS else "a multimodal checkpoint"
        raise r.fail(
            "text_config",
            f"{about}: its vision tower is not modelled (mem4d models Qwen3-VL's, "
            "Qwen3.5's, Llama 4's, Gemma 3's and Mistral 3's); pass --text-only to count its language model alone",
        )
    for key in raw:
        if key not in WRAPPER_KEYS and key not in HARMLESS and key not in vision.OWN.get(kind, ()):
            raise r.fail(key, f"not a key mem4d knows for model_type {kind!r}: refused rather than ignored")
    tower = raw.get("vision_config", vision.ABSENT.get(kind, {}))
    named = tower.get("model_type", vision.KIND.get(kind)) if isinstance(tower, dict) else None
    if kind in vision.KIND and named != vision.KIND[kind]:
        raise r.fail(
            "vision_config",
            f"a vision tower of model_type {named!r} is not modelled; {kind}'s is {vision.KIND[kind]!r}",
        )
    # the bookkeeping keys every config class has (dtype, names): no tensor
    tower = {key: value for key, value in tower.items() if key not in HARMLESS} if isinstance(tower, dict) else tower
    text = raw["text_config"] if isinstance(raw["text_config"], dict) else {}
    return vision.read(tower, kind, text, r.path, raw)


def _name(raw: dict, path: Path) -> str:
    """A config.json's model name: its _name_or_path, else the file's own name unless that is the generic
    'config', else its model_type (e.g. 'llama'), else 'config'."""
    for name in (raw.get("_name_or_path"), path.stem if path.stem != "config" else None, raw.get("model_type")):
        if isinstance(name, str) and name.strip():
            return name.strip()
    return path.stem


def from_hf_config(path: str | Path, text_only: bool = False) -> ModelShape:
    """The ModelShape of a Hugging Face config.json (every key modelled or refused in one line)."""
    return read(path, text_only)


def resolve_model(spec: str, text_only: bool = False) -> ModelShape:
    """A preset name, or a path to a config.json (or to a directory holding one); text_only: a multimodal config's
    language model alone."""
    if spec in PRESETS:
        if text_only:
            raise ConfigError(f"--text-only reads a multimodal config.json; {spec!r} is a preset (a text model)")
        return PRESETS[spec]
    path = Path(spec)
    if path.is_dir():
        path = path / "config.json"
    if path.suffix == ".json" or path.exists() or path.is_symlink():  # a link that loops: read() names its error
        shape, note = read_noted(path, text_only)
        if note is not None:  # the command's output is the training's; the checkpoint's storage is said beside it
            print(f"note: {note}", file=sys.stderr)
        return shape
    raise ConfigError(f"unknown model {spec!r}: choose a preset ({', '.join(PRESETS)}) or a path to a config.json")
