"""mem4d's symbolic half: sympy closed forms for per-GPU memory of 4D-parallel Llama training."""
from . import recipes  # noqa: F401  (registers each recipe's rows into the one rule table)
