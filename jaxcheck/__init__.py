"""jaxcheck: a flax nnx Llama train step sharded over a 4D (data, pipe, tensor, context) mesh, compiled by XLA.
Importing the package imports no jax; its modules do."""
