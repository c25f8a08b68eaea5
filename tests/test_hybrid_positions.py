"""Learned absolute positions beside Mamba-2 layers: Megatron-LM's mamba_builders.py passes --position-embedding-type
(default learned_absolute) to MambaModel, whose LanguageModelEmbedding holds a [max_position_embeddings, h] table
(megatron-core 0.16.1 models/mamba/mamba_model.py, common/embeddings/language_model_embedding.py).

Source of truth: a hand count of that table (s_p x h parameters, bf16 weights on the first stage). Exact."""

import dataclasses

import pytest

from model_files import HYBRID, read as _read
from model_files import NEMOTRON_H as MAMBA

from symbolic.config.errors import ConfigError
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate

GDN = {
    "model_type": "qwen3_next",
    **HYBRID,
    "num_hidden_layers": 4,
    "linear_num_key_heads": 4,
    "linear_num_value_heads": 8,
    "linear_key_head_dim": 32,
    "linear_value_head_dim": 32,
    "linear_conv_kernel_dim": 4,
    "full_attention_interval": 2,
    "num_experts": 0,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [0, 1, 2, 3],
    "tie_word_embeddings": False,
}


def test_learned_positions_beside_mamba_are_the_first_stages_table(tmp_path):
    shape = _read(tmp_path, MAMBA)
    with_table = dataclasses.replace(shape, positions=512)
    assert with_table.param_count - shape.param_count == 512 * 256
    training = Training(s=256, p=3)
    first = [estimate(m, training).stages[0]["bytes"]["weights"] for m in (shape, with_table)]
    last = [estimate(m, training).stages[-1]["bytes"]["weights"] for m in (shape, with_table)]
    assert first[1] - first[0] == 2 * 512 * 256  # bf16, on the embedding's stage
    assert last[1] == last[0]


def test_learned_positions_beside_gated_deltanet_refused(tmp_path):
    shape = _read(tmp_path, GDN)
    assert shape.linear_layers
    with pytest.raises(ConfigError, match="not beside Gated DeltaNet"):
        dataclasses.replace(shape, positions=512)
