"""The flax Llama: layers, context-parallel and flash attention, the GPipe schedule, the logical-axis sharding table."""
