"""The tiny sizes the jaxcheck and plan tests build their shapes from, and the layer kinds several of them share."""

from symbolic.config.shapes import ModelShape

# h 64, f 176, a 4, k 2, v 136: all distinct, each whole over t = 2 (the depth L each test's own)
SIZES = {"h": 64, "f": 176, "a": 4, "k": 2, "v": 136}
# Qwen3-Next's gated attention with per-head q/k norms
GATED = {"qk_norm": "head", "attn_gate": True}
# Qwen3.5's pattern at L = 8: three Gated DeltaNet layers to one attention layer, twice; 2 key heads of 16, a conv of 4
GDN = {"linear_layers": (0, 1, 2, 4, 5, 6), "lin_k_heads": 2, "lin_k_dim": 16, "conv_width": 4}
# GPT-2's layer: LayerNorm, a GeLU MLP, biases on Q/K/V, the attention output and both MLP projections
GPT = {"mlp": "gelu", "norm": "layer", "qkv_bias": True, "o_bias": True, "mlp_bias": True}


def tiny(name: str, **fields) -> ModelShape:
    """SIZES with fields (the depth L among them) over them."""
    return ModelShape(name, **(SIZES | fields))
