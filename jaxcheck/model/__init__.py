"""The flax causal language model of every supported family (causal_lm.CausalLM): layers, context-parallel and flash attention, multi-head latent attention, the GPipe schedule, the
logical-axis sharding table."""
