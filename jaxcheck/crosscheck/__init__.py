"""The cross-check: the `jax` profile against XLA (verify, explain), many configurations (sweep) and their report."""
