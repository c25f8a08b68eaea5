"""What the page's config.json reader (assets/pyjson.js, assets/reader.js) reads off the Python reader, so each fact is
declared once: the bounds, the key tables with what each refusal says mem4d models (config/hfkeys.py), the families
with their keys, descriptions, library defaults and aliases (config/families/), the model_types of latent attention,
ModelShape's field defaults and the names the page's model data reads. The predicates (Python lambdas) are ported
in reader.js by key; tests/test_web_reader.py holds both readers equal over the published files and hostile ones."""

from __future__ import annotations

from dataclasses import MISSING, fields

from ..config import hfconfig, hfjson, hfkeys, rules
from ..config.architecture import DERIVED, Architecture
from ..config.families import FAMILIES, SUPPORTED, aliases
from ..config.families.deepseek import MLA
from ..config.glossary import FROM_MODEL, TRAINING_FIELD
from ..config.kinds import KINDS
from ..config.shapes import ModelShape

# the model_types the page reads (reader.js ports their build functions); a file of another is answered in one line
# naming `mem4d web --model FILE -o site`, which reads every family
PAGE_FAMILIES = (
    "llama",
    "mistral",
    "granite",
    "qwen2",
    "qwen3",
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
    "olmoe",
    "olmo2",
    "gpt2",
)


def _value(x):
    """A declared value as the page reads it: a float tagged (Python tells 1.0 from 1), the rest as JSON has it."""
    return {"$float": x} if isinstance(x, float) else x


def _supports(table: dict) -> dict:
    return {key: rule.supports for key, rule in table.items()}


def reader_data() -> dict:
    """The declarations reader.js reads (MEM4D.site.reader)."""
    families = {
        kind: {
            "keys": list(family.keys),
            "about": family.about,
            "values": _supports(family.values or {}),
            "defaults": {k: _value(v) for k, v in (family.defaults or {}).items()},
            "aliases": aliases.ALIASES.get(kind, {}),
        }
        for kind, family in FAMILIES.items()
        if kind in PAGE_FAMILIES
    }
    defaults = {
        f.name: list(f.default) if isinstance(f.default, tuple) else f.default
        for f in fields(ModelShape)
        if f.default is not MISSING and f.name != "vision"
    }
    return {
        "bounds": {
            "max_bytes": hfjson.MAX_BYTES,
            "max_depth": hfjson.MAX_DEPTH,
            "max_digits": hfjson.MAX_DIGITS,
            "max_size": hfkeys.MAX_SIZE,
        },
        "storage": hfconfig.STORAGE,
        "supported": SUPPORTED,
        "families": families,
        "mla_families": [kind for kind, family in FAMILIES.items() if "kv_lora_rank" in family.keys],
        "mla_keys": list(MLA),
        "harmless": sorted(hfkeys.HARMLESS),
        "only": _supports(hfkeys.ONLY),
        "harmless_values": _supports(hfkeys.HARMLESS_VALUES),
        "values": _supports(hfkeys.VALUES),
        "shape_defaults": defaults,
        "architecture": [[f.name, f.name in DERIVED] for f in fields(Architecture)],
        "from_model": list(FROM_MODEL),
        "training_field": TRAINING_FIELD,
        "kinds": KINDS,
        "model_reads": [name for name in rules.MODEL_READS if name not in ("stages_alike", "linear_alike")],
        "model_letters": [[letter, TRAINING_FIELD[letter]] for letter in rules.MODEL_LETTERS],
    }
