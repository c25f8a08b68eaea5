"""Facts of jaxcheck's train step that the `jax` profile, the rule table and jaxcheck itself read from here."""
from __future__ import annotations

FLASH_BLOCK = 128  # keys per block of jaxcheck's flash attention: min(s, FLASH_BLOCK); s must be a multiple of it

# the checkpoint names (jaxcheck.model.llama) that the selective remat policy saves; the attention core is recomputed
SELECTIVE_SAVED = ("attn_norm_in", "attn_in", "q", "k", "v", "attn_out", "mlp_norm_in", "mlp_in", "gate", "up", "swiglu")
