"""Count a nemotron-nas (DeciLM) config.json's parameters as Megatron-Core builds it: HeterogeneousTransformerConfig
reads block_configs (megatron-core 0.16.1 transformer/heterogeneous/heterogeneous_config.py), GPTModel with
get_gpt_heterogeneous_layer_spec (models/gpt/heterogeneous/heterogeneous_layer_specs.py, the local spec: use_te False,
whose norms are separate modules where TE fuses them into the first linear: the same parameters), built on torch's
meta device in a one-process gloo group. Megatron-Core and torch are not mem4d dependencies: run by hand, e.g.
`PYTHONPATH=<megatron-core 0.16.1 unpacked> /work/torchvenv/bin/python benchmarks/megatron_count_nas.py FILE.json
... -o records/megatron-count-nas.jsonl`; one JSON row per file."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _group() -> None:
    """A one-process gloo group and Megatron's model-parallel state of size 1 (what TransformerBlock reads)."""
    import torch.distributed as dist
    from megatron.core import parallel_state

    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29517", rank=0, world_size=1)
        parallel_state.initialize_model_parallel(1, 1)


def count(path: Path) -> dict:
    """The file's GPTModel parameters as Megatron-Core builds them (the Megatron-Bridge LlamaNemotronBridge's letters:
    num_query_groups from block 0, rope, SwiGLU, RMSNorm, no biases, untied head unless the file ties it)."""
    import torch
    import torch.nn.functional as F
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.heterogeneous.heterogeneous_layer_specs import get_gpt_heterogeneous_layer_spec
    from megatron.core.transformer.heterogeneous.heterogeneous_config import HeterogeneousTransformerConfig

    text = path.read_text()
    raw = json.loads(text)
    h, a = raw["hidden_size"], raw["num_attention_heads"]
    group = next(b["attention"]["n_heads_in_group"] for b in raw["block_configs"] if not b["attention"]["no_op"])
    _group()
    config = HeterogeneousTransformerConfig(
        num_layers=raw["num_hidden_layers"],
        hidden_size=h,
        num_attention_heads=a,
        num_query_groups=a // group,
        kv_channels=h // a,
        gated_linear_unit=True,
        activation_func=F.silu,
        normalization="RMSNorm",
        add_bias_linear=raw.get("attention_bias", False) or raw.get("mlp_bias", False),
        bf16=True,
        params_dtype=torch.bfloat16,
        use_cpu_initialization=True,
        perform_initialization=False,
        heterogeneous_layers_config_encoded_json=text,
    )
    with torch.device("meta"):
        model = GPTModel(
            config,
            get_gpt_heterogeneous_layer_spec(config, use_te=False),
            vocab_size=raw["vocab_size"],
            max_sequence_length=4096,
            position_embedding_type="rope",
            share_embeddings_and_output_weights=raw.get("tie_word_embeddings", False),
        )
    return {"file": str(path), "parameters": sum(p.numel() for p in model.parameters()), "megatron_core": _version()}


def _version() -> str:
    from megatron.core import package_info

    return package_info.__version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="nemotron-nas config.json files")
    parser.add_argument("-o", "--out", type=Path, help="write the rows here (JSON lines) as well as to stdout")
    args = parser.parse_args(argv)
    rows = [count(path) for path in args.files]
    for row in rows:
        print(json.dumps(row))
    if args.out:
        args.out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
