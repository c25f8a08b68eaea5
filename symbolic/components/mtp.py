"""DeepSeek-V3's multi-token prediction on the last pipeline stage, as Megatron-Core builds it
(NVIDIA/Megatron-LM d98e8a6, megatron/core/transformer/multi_token_prediction.py, MultiTokenPredictionLayer): each of
the n_mtp modules normalises the embedding of the tokens shifted by one more (enorm) and the previous depth's hidden
states (hnorm), projects their concatenation [s, b, 2h] to h (eh_proj, column-parallel), runs one transformer layer
of the decoder's last kind, a final norm, and the LM head it shares with the model, with its own loss. With
--mtp-use-repeated-layer one such module is built and run at each of the n_mtp depths (MultiTokenPredictionBlock)."""

from __future__ import annotations

import sympy as sp

from ..config.switches import Switches
from ..config.symbols import B_a, b, h, n_mtp, s, t
from .base import Component, per_gpu_tokens
from .ends import output_tensors
from .weights import attention_params, embedding_params, final_norm_params, mlp_params, moe_dense_params, norm_params


def mtp_modules(sw: Switches) -> sp.Expr:
    """Multi-token-prediction modules the last stage holds: n_mtp, or the one module run at every depth with
    --mtp-use-repeated-layer (Megatron-LM d98e8a64 multi_token_prediction.py MultiTokenPredictionBlock._build_layers:
    one layer, self.layers[0] in every iteration of forward); its weights once, its tensors per depth."""
    return sp.Integer(1) if sw.mtp_repeated else n_mtp


def mtp_params(sw: Switches) -> sp.Expr:
    """Parameters of the mtp_modules on one GPU of the last stage but their routed experts (components.experts)
    and the embedding and LM head they share: enorm, hnorm and the final norm (replicated), eh_proj [2h, h] split
    over t, and a layer's attention, norms and dense MLP or router and shared experts."""
    if not sw.mtp:
        return sp.Integer(0)
    layer = attention_params(sw) + norm_params(sw) + (moe_dense_params(sw) if sw.mtp_moe else mlp_params(sw))
    return mtp_modules(sw) * (3 * final_norm_params(sw) + 2 * h * h / t + layer)


def mtp_embedding_params(sw: Switches) -> sp.Expr:
    """The last stage's own copy of the word embedding [v/t, h] when p > 1 (the MTP modules look up the shifted
    tokens themselves): an ordinary parameter there, with its main gradient and optimizer state, kept equal to the
    first stage's by an all-reduce, untied embeddings too (Megatron-Core gpt_model.py: the embedding is built where
    pre_process or mtp_process; language_module.py setup_embeddings_and_output_layer; d98e8a6)."""
    return embedding_params(sw) if sw.mtp else sp.Integer(0)


def mtp_moe_layers(sw: Switches) -> sp.Expr:
    """MoE layers the multi-token-prediction modules add to the last stage (their experts' states, routing state and
    bias buffers, one set per module): mtp_modules when their layer has experts."""
    return mtp_modules(sw) if sw.mtp and sw.mtp_moe else sp.Integer(0)


def mtp_tensors(sw: Switches) -> list[Component]:
    """What one module keeps per micro batch beyond its transformer layer's tensors: enorm's input (the shifted
    tokens' embedding), eh_proj's input [s, b, 2h] (sequence-parallel shard), and its own final-norm input, LM-head
    input and logits (components.ends.output_tensors). hnorm's input is the decoder's output, which the model's final
    norm keeps already."""
    return [
        Component(
            "mtp_enorm_input",
            per_gpu_tokens(B_a * s * b * h, False, sw),
            "embedding of the shifted tokens, enorm's input",
        ),
        Component(
            "mtp_eh_proj_input",
            per_gpu_tokens(B_a * s * b * 2 * h, False, sw),
            "concatenated normed embedding and hidden states [s, b, 2h], eh_proj's input",
        ),
        *output_tensors(sw),
    ]


def mtp_activations(micro: sp.Expr, sw: Switches) -> Component:
    """The tensors of the n_mtp depths for the last stage's in-flight micro batches, each depth its own (a repeated
    module too: autograd keeps every call's): their layer's (dense or MoE) and mtp_tensors."""
    if not sw.mtp:
        return Component("mtp_activations", sp.Integer(0), "no multi-token prediction")
    from .activations import layer_activation

    per_module = layer_activation(sw, moe=sw.mtp_moe) + sp.Add(*(part.expr for part in mtp_tensors(sw)))
    return Component(
        "mtp_activations",
        micro * n_mtp * per_module,
        "the multi-token-prediction modules' layer tensors, enorm and eh_proj inputs and own output "
        f"layer and logits, per in-flight micro batch ({sw.recompute} recompute)",
    )
