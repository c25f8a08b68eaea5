"""jaxcheck: the train step of a model of any supported family (flax nnx, model.causal_lm.CausalLM) sharded over a
5-axis (data, expert, pipe, tensor, context) mesh (jaxcheck.mesh.AXES), compiled by XLA.
Importing the package imports no jax; its modules do."""
