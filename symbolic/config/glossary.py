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
# one pipeline stage (rank r of p): what a stage's expressions take beyond the letters above; L_r = L/p and
# m_r = the schedule's in-flight count of rank r when the split is even
STAGE = {
    "r": "pipeline rank of a stage, 0 (first) to p - 1 (last)",
    "L_r": "layers on pipeline rank r (L/p with an even split; --stage-layers otherwise)",
    "m_r": "micro batches (of a whole stage) in flight on rank r at its peak",
}
NAMES = tuple(SHAPE | PARALLEL | SCHEDULE | BYTES)  # the estimator's inputs, in this order
STAGE_NAMES = ("L_r", "m_r")  # a stage's extra inputs (the in-flight count takes r)
MEANING = SHAPE | PARALLEL | SCHEDULE | BYTES | STAGE
LATEX = {"vpp": r"v_{pp}", "B_w": r"B_{w}", "B_g": r"B_{g}", "B_o": r"B_{o}", "B_a": r"B_{a}", "L_r": r"L_{r}",
         "m_r": r"m_{r}"}  # the rest: as named

# where a configuration's value of each letter comes from: these from ModelShape, the rest from Training (the
# attribute of the same name, or this field)
FROM_MODEL = ("h", "f", "a", "k", "L", "v")
TRAINING_FIELD = {"B_w": "weight_bytes", "B_g": "grad_bytes", "B_o": "opt_bytes", "B_a": "act_bytes"}


def inputs_for(shape, training) -> dict[str, int]:
    """Every letter's value for one model shape and training config (ModelShape, Training), by name: the estimator's
    named inputs."""
    return {name: getattr(shape if name in FROM_MODEL else training, TRAINING_FIELD.get(name, name)) for name in NAMES}
