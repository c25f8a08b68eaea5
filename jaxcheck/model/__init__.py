"""The flax Llama: layers, context-parallel and flash attention, multi-head latent attention, the GPipe schedule, the
logical-axis sharding table."""
