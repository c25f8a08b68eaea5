"""What one torchtitan Llama 3 TransformerBlock saves for backward, listed by running each torchtitan version's own
model code (not a rewrite) on the CPU under saved-tensor hooks: 9dec370 (2024-12, the H100 benchmark's, the code
mem4d's torchtitan recipe reads), 0.1.0 (2025-06-18, the 2025 release), 0.2.2 (2026-02, whose job config
`--torchtitan` reads) and 0.3.0 (2026-09). Each version's `debugmodel` flavour (dim 256, 16 heads, no GQA, FFN 768 in
all four) with a 2048-token vocabulary, its weights bf16 as FSDP2 gathers them, eager (what full checkpointing
recomputes in backward and what `--recompute none` keeps), with torchao's Float8 (tensorwise) on the block's linears
where torchao runs on the CPU.

Run by hand, one version a process (every version is the package `torchtitan`), torch and torchao in their own venv:

    python benchmarks/titan_versions.py --source 9dec370=DIR --source 0.1.0=DIR ... [-o records/titan-versions-cpu.jsonl]

DIR holds a version's `torchtitan/` package: `git archive 9dec370 torchtitan` of pytorch/torchtitan, or an unpacked
wheel (`pip download --no-deps torchtitan==0.1.0`). The package's `__init__` and its data/tokenizer/metrics modules
are not run (stand-ins for datasets, tokenizers, tensorboard and the like: nothing of them is on the model's path);
the model's modules are. torch.compile is not listed: inductor's CPU partitioner is not the CUDA run's, so what a
compiled block saves on the GPU cannot be read off this machine (benchmarks/torch_saved.py lists the CPU cut)."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
from pathlib import Path

ENTRY = {
    "9dec370": ("torchtitan.models.llama", "pytorch/torchtitan@9dec370 torchtitan/models/llama/model.py"),
    "0.1.0": ("torchtitan.models.llama3", "torchtitan 0.1.0 torchtitan/models/llama3/model/model.py"),
    "0.2.2": ("torchtitan.models.llama3", "torchtitan 0.2.2 torchtitan/models/llama3/model/model.py"),
    "0.3.0": (
        "torchtitan.models.llama3",
        "torchtitan 0.3.0 torchtitan/models/llama3/model.py, models/common/{decoder,attention,rope,feed_forward}.py",
    ),
}
B, S, V = 2, 64, 2048


def model_of(torch, version: str):
    """The version's debugmodel built by its own code, on the CPU, weights bf16."""
    import dataclasses
    import importlib

    package = importlib.import_module(ENTRY[version][0])
    if version == "9dec370":
        model = package.Transformer.from_model_args(
            dataclasses.replace(package.llama3_configs["debugmodel"], vocab_size=V)
        )
    elif version == "0.1.0":
        args = dataclasses.replace(package.llama3_configs["debugmodel"], vocab_size=V)
        model = importlib.import_module("torchtitan.models.llama3.model.model").Transformer(args)
        with torch.no_grad():
            model.init_weights()
    elif version == "0.2.2":
        args = dataclasses.replace(package.llama3_args["debugmodel"], vocab_size=V)
        model = importlib.import_module("torchtitan.models.llama3.model.model").Transformer(args)
        with torch.no_grad():
            model.init_weights()
    else:  # 0.3.0's language models take flex, flex_flash or varlen, none with a CPU backward: the kernel is the
        # version's own ScaledDotProductAttention (models/common/attention.py; flash saves q, k, v, out, lse as flex)
        model = package.llama3_configs["debugmodel"]("flex").build()  # vocabulary 2048 already
        attention = importlib.import_module("torchtitan.models.common.attention")
        for layer in model.layers.values():
            layer.attention.inner_attention = attention.ScaledDotProductAttention(
                attention.ScaledDotProductAttention.Config()
            )
        with torch.no_grad():
            model.init_weights()
    for param in model.parameters():
        param.data = param.data.to(torch.bfloat16)
    return model


def first_block(model):
    layers = model.layers
    return layers["0"] if isinstance(layers, dict) or hasattr(layers, "keys") else layers[0]


def listing(torch, version: str, float8: str) -> dict:
    """The tensors layers[0]'s forward saves and still holds when the model's forward ends: each storage once, the
    model's parameters and buffers left out, `is_input` marking the block's input."""
    import weakref

    torch.manual_seed(0)
    model = model_of(torch, version)
    block = first_block(model)
    if float8 != "none":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        convert_to_float8_training(block, config=Float8LinearConfig.from_recipe_name(float8))
    # the model's parameters and buffers (the RoPE table a block slices is the model's, shared by every block)
    weights = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    packed, state = [], {}

    def pack(tensor):
        packed.append(weakref.ref(tensor))
        return tensor

    hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)

    def enter(module, args):
        state["input"] = args[0].untyped_storage().data_ptr()
        hooks.__enter__()

    block.register_forward_pre_hook(enter)
    block.register_forward_hook(lambda *_: hooks.__exit__(None, None, None))
    tokens = torch.randint(0, V, (B, S))
    if version == "0.3.0":  # one document a row: positions 0..S-1, causal SDPA (no mask)
        out = model(tokens, torch.arange(S).repeat(B, 1))
    else:
        out = model(tokens)
    saved, seen = [], set()
    for ref in packed:
        t = ref()
        if t is None or t.untyped_storage().data_ptr() in weights | seen:
            continue
        seen.add(t.untyped_storage().data_ptr())
        saved.append(
            {
                "shape": list(t.shape),
                "dtype": str(t.dtype).removeprefix("torch."),
                "bytes": t.untyped_storage().nbytes(),
                "is_input": t.untyped_storage().data_ptr() == state["input"],
            }
        )
    out.float().mean().backward()
    h = block.attention_norm.weight.shape[0]
    return {
        "float8": float8,
        "sizes": {"b": B, "s": S, "h": h, "v": V},
        "tensors": saved,
        "bytes": sum(t["bytes"] for t in saved),
        "bytes_per_token_h": sum(t["bytes"] for t in saved) / (B * S * h),
    }


def run_one(version: str, root: str) -> list[dict]:
    """Every listing of one version (this process imports it)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import titan_loader

    titan_loader.install(Path(root), triton=version != "0.3.0")  # 0.3.0 runs without it
    import torch

    try:
        import torchao

        ao = torchao.__version__
    except ImportError:
        ao = None
    head = {
        "version": version,
        "code": ENTRY[version][1],
        "torch": torch.__version__,
        "torchao": ao,
        "python": platform.python_version(),
        "device": "cpu",
        "date": datetime.date.today().isoformat(),
    }
    out = []
    for float8 in ("none", "tensorwise") if ao else ("none",):
        try:
            out.append({**head, **listing(torch, version, float8)})
        except Exception as err:  # noqa: BLE001 - recorded, not raised
            out.append({**head, "float8": float8, "error": f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", action="append", default=[], metavar="VERSION=DIR")
    parser.add_argument("--one", nargs=2, metavar=("VERSION", "DIR"), help=argparse.SUPPRESS)
    parser.add_argument("-o", "--out")
    args = parser.parse_args()
    if args.one:
        print("\n".join(json.dumps(r) for r in run_one(*args.one)))
        return 0
    lines = []
    for item in args.source:
        version, _, root = item.partition("=")
        if version not in ENTRY:
            print(f"titan_versions: {version} is not one of {', '.join(ENTRY)}", file=sys.stderr)
            return 2
        done = subprocess.run([sys.executable, __file__, "--one", version, root], capture_output=True, text=True)
        if done.returncode:
            print(done.stderr[-2000:], file=sys.stderr)
            return 1
        lines += [line for line in done.stdout.splitlines() if line.startswith("{")]
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
