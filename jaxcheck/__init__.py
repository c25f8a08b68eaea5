"""jaxcheck: a flax nnx Llama train step sharded over a 4D (data, pipe, tensor, context) mesh, compiled by XLA.

Importing this package does not import jax; the modules do (mesh, llama, step, compile...).
"""
