"""The glossary: every letter of Fujii et al. (arXiv 2411.06465) with its meaning, and where a configuration's value of
it comes from. No sympy here: symbols.py makes the sympy symbols, the estimator takes its inputs in this order."""
from __future__ import annotations

SHAPE = {
    "s": "sequence length",
    "b": "micro batch size",
    "h": "hidden size",
    "f": "SwiGLU intermediate size",
    "a": "attention heads",
    "k": "key/value heads (GQA)",
    "L": "transformer layers",
    "v": "vocabulary size",
}
PARALLEL = {
    "d": "data-parallel size",
    "t": "tensor-parallel size (sequence parallel shares it)",
    "p": "pipeline-parallel size",
    "c": "context-parallel size",
}
SCHEDULE = {
    "m": "micro batches per step, gbs / (b d)",
    "vpp": "virtual pipeline stages per rank",
}
BYTES = {
    "B_w": "bytes per weight",
    "B_g": "bytes per gradient",
    "B_o": "optimizer bytes per parameter",
    "B_a": "bytes per activation element",
}
MEANING = SHAPE | PARALLEL | SCHEDULE | BYTES
NAMES = tuple(MEANING)  # the estimator's inputs, in this order
LATEX = {"vpp": r"v_{pp}", "B_w": r"B_{w}", "B_g": r"B_{g}", "B_o": r"B_{o}", "B_a": r"B_{a}"}  # the rest: as named

# where a configuration's value of each letter comes from: these from ModelShape, the rest from Training (the
# attribute of the same name, or this field)
FROM_MODEL = ("h", "f", "a", "k", "L", "v")
TRAINING_FIELD = {"B_w": "weight_bytes", "B_g": "grad_bytes", "B_o": "opt_bytes", "B_a": "act_bytes"}


def inputs_for(shape, training) -> dict[str, int]:
    """Every letter's value for one model shape and training config (ModelShape, Training), by name: the estimator's
    named inputs."""
    return {name: getattr(shape if name in FROM_MODEL else training, TRAINING_FIELD.get(name, name)) for name in NAMES}
