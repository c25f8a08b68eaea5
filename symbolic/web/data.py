"""What the page reads besides the code: each model's letters, its layer kinds per pipeline split, the controls'
values, the fixed choices of the recipe, the rule table traced (rulesjs); all from the CLI's own objects."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from ..config import rules
from ..config.architecture import Architecture
from ..config.glossary import FROM_MODEL, NAMES, TRAINING_FIELD, inputs_for
from ..config.kinds import mixed
from ..config.shapes import DEFAULT_MODEL, ModelShape
from ..config.training import Training
from ..flags.values import parse_bytes
from .readerdata import reader_data
from .rulesjs import rules_js
from .timedata import hardware, layer_prefixes, model_proxy, model_time, proxy, time_widths


@dataclass(frozen=True)
class Options:
    """The values each control offers (the rule table, evaluated in the page, then disables those a configuration
    breaks); the first of each is `mem4d estimate`'s default except where noted."""

    d: tuple = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    t: tuple = (1, 2, 4, 8)
    p: tuple = (1, 2, 4, 8, 16)
    c: tuple = (1, 2, 4, 8)
    e: tuple = (1, 2, 4, 8, 16, 32, 64)
    vpp: tuple = (1, 2, 4)
    s: tuple = (4096, 1024, 2048, 8192, 16384, 32768, 65536, 131072)
    b: tuple = (1, 2, 4, 8)
    m: tuple = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)  # micro batches per step; 0: one full pipeline (gbs = p b d)
    recipe: tuple = ("megatron", "torchtitan", "deepspeed")  # --recipe names (recipes.RECIPES: their profiles)
    fp8: tuple = ("none", "delayed", "tensorwise", "blockwise", "mxfp8", "rowwise")  # --fp8 (precision.FP8_RECIPES)
    recompute: tuple = ("none", "selective", "full")
    zero: tuple = (1, 0, 2, 3)
    gpu_mem: tuple = ("80GiB", "24GiB", "40GiB", "48GiB", "94GiB", "141GB", "192GB", "288GB")


SCOPE = (
    "What this page offers: the Megatron-LM, torchtitan and DeepSpeed recipes, each with its own default "
    "precision and optimizer, FP8 where the recipe models it, sequence parallel, flash attention, 1F1B with even "
    "pipeline stages, expert tensor parallel = tp, the communicator and context overheads; the models chosen when "
    "the page was built (mem4d web --model NAME or config.json) or a config.json pasted here, of a model type the page "
    "reads and an architecture it has code for. Every other flag of mem4d estimate (precision, "
    "--stage-layers, --etp) is not offered here: run the command. The plan view ranks as mem4d plan does, with "
    "the recompute, ZeRO stage and FP8 as set and even stages."
)
# the letters the page sets (rules.letters' names): the controls', and the model's (rules.model_letters)
CONTROLS = ("d", "t", "p", "c", "vpp", "s", "b", "gbs", "m", "e", "t_e", "recompute", "zero", "fp8")
SWITCHING = ("recompute", "zero", "fp8")  # the controls that change the expressions' form (Switches)


def arch_text(shape: ModelShape) -> str:
    """A model's Architecture's features as JSON text, keys sorted: what arch_id hashes, and what the page's reader
    (assets/shape.js) writes of a pasted config.json to find the built code it runs on."""
    return json.dumps(Architecture.of(shape).features(), sort_keys=True)


def arch_id(shape: ModelShape) -> str:
    """A short name of a model's Architecture: models alike share their code."""
    return hashlib.sha256(arch_text(shape).encode()).hexdigest()[:10]


def model_data(shape: ModelShape, spec: str) -> dict:
    """A model as the page reads it: how the command lines it shows name it (`spec`: a preset's name, a config.json's
    path as `mem4d web --model` was given it), its letters (the estimator's inputs from the shape), the letters the rules read,
    its layers of each kind as prefix sums (a pipeline rank's counts, timedata.layer_prefixes), whether every rank is
    listed (mixed layers), and the step-time model's letters or its refusal."""
    base = Training()
    inputs = {name: value for name, value in inputs_for(shape, base).items() if name in FROM_MODEL}
    letters = {name: x for name, x in rules.model_letters(shape).items() if not callable(x)}  # jaxcheck's methods
    return {
        "name": shape.name,
        "spec": spec,
        "param_count": shape.param_count,
        "arch": arch_id(shape),
        "inputs": inputs,
        "letters": letters,
        "mixed": bool(mixed(shape)),
        "prefix": layer_prefixes(shape),
        "time": model_time(shape),
        "proxy": model_proxy(shape),
    }


def recipe_training(profile: str, **fields) -> Training:
    """The recipe's default Training (its precision, its --zero and --recompute defaults), `fields` over them."""
    from ..recipes import PROFILES, widths

    return Training(**{**widths(profile), **PROFILES[profile].defaults, **fields})


def fixed_inputs(profile: str) -> dict:
    """The estimator inputs the page does not offer as controls, from the recipe's default Training: byte widths,
    n_ac, C_f, n_v."""
    training = recipe_training(profile)
    skip = set(FROM_MODEL) | {"d", "t", "p", "c", "vpp", "s", "b", "m", "e", "t_e"}
    return {name: getattr(training, TRAINING_FIELD.get(name, name)) for name in NAMES if name not in skip}


def fixed_letters(profile: str, model_names: tuple[str, ...]) -> dict:
    """What the rules read that the page holds fixed (the recipe's default Training's letters)."""
    x = vars(rules.letters(recipe_training(profile)))
    return {name: value for name, value in x.items() if name not in CONTROLS and name not in model_names}


def _reads(code: str) -> set[str]:
    """The page's letters a traced predicate reads."""
    return set(re.findall(r"\bx\.(\w+)", code))


def possible(profile: str, shape: ModelShape, traced: list[dict], **switching) -> bool:
    """Whether some configuration of the controls could run this model with these switching controls (recompute,
    zero, fp8) under the recipe: every traced rule that reads nothing but the model and those holds (the others
    depend on the degrees)."""
    from ..recipes import select

    x = rules.letters(recipe_training(profile, **switching), shape)
    fixed = {rule["name"] for rule in traced if not _reads(rule["holds"]) & (set(CONTROLS) - set(SWITCHING))}
    return all(rule.holds(x) for rule in select(profile) if rule.name in fixed)


def fp8_class(fp8: str) -> str:
    """What an --fp8 recipe changes of the expressions' form (Switches.fp8, fp8_rows): none, fp8 or rows."""
    return "none" if fp8 == "none" else "rows" if fp8 == "rowwise" else "fp8"


def recipe_data(recipe: str, model_names: tuple[str, ...], options: Options) -> dict:
    """A recipe as the page reads it: its profile, fixed inputs (B_q and B_c per --fp8), --zero/--recompute
    defaults, traced rules."""
    from ..recipes import PROFILES, RECIPES

    profile = RECIPES[recipe]
    defaults = {"zero": Training().zero, "recompute": Training().recompute, **PROFILES[profile].defaults}
    quantized = {
        fp8: {name: getattr(recipe_training(profile, fp8=fp8), TRAINING_FIELD[name]) for name in ("B_q", "B_c")}
        for fp8 in options.fp8
    }
    return {
        "profile": profile,
        "fixed": fixed_inputs(profile),
        "fp8": quantized,
        "defaults": defaults,
        "time_widths": {fp8: time_widths(fp8) for fp8 in options.fp8},
        "rules": rules_js(profile, fixed_letters(profile, model_names), CONTROLS + model_names),
    }


def site_data(shapes: list[ModelShape], options: Options, specs: dict[str, str] | None = None) -> dict:
    """Everything data.js holds: options, models (`specs`: each model's --model argument by its name, where not its
    name), the recipes (fixed inputs, traced rules), GPU sizes in bytes, the built architectures' features (a pasted
    config.json's model runs on the code of the one its features equal) and the config.json reader's declarations."""
    models = [model_data(shape, (specs or {}).get(shape.name, shape.name)) for shape in shapes]
    model_names = tuple(models[0]["letters"])
    return {
        "default_model": DEFAULT_MODEL,
        "scope": SCOPE,
        "options": {name: list(getattr(options, name)) for name in Options.__dataclass_fields__},
        "gpu_bytes": {size: parse_bytes(size) for size in options.gpu_mem},
        "threshold": 0.8,
        "models": models,
        "names": list(NAMES),
        "hardware": hardware(),
        "proxy": proxy(),
        "arch_features": {arch_id(shape): arch_text(shape) for shape in shapes},
        "reader": reader_data(),
        "recipes": {recipe: recipe_data(recipe, model_names, options) for recipe in options.recipe},
    }
