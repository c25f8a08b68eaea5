"""mem4d's symbolic half: sympy closed forms for per-GPU memory of 4D-parallel Llama training."""
