"""List what autograd keeps of one torchtitan TransformerBlock, eager and under torch.compile, per checkpointing mode:
the source of truth of the torchtitan recipe's per-block tensors (symbolic/recipes/torchtitan/fsdp2.py, compiled.py).

Run by hand (needs torch and a C++ compiler for inductor's CPU code, which mem4d does not depend on):
`python benchmarks/torch_saved.py [-o records/torch-saved-cpu.jsonl]`. It writes one JSON line per (Float8 recipe,
compiled, mode): torch's and torchao's versions, the block's sizes, and the tensors saved for backward (shape,
dtype, bytes), each storage once, the block's bf16 weights and its RoPE buffer left out (FSDP2's gathered
parameters, counted apart; the buffer is the model's, shared by every block); `per_token` false marks what is not an
activation (a weight's Float8 amax and scale, the checkpoint's RNG state).

The block is torchtitan's Llama TransformerBlock at 9dec370 (models/llama/model.py, the code of its December 2024
H100 benchmark), written out here from that file's structure: the Python RMSNorm (x.float(), x * rsqrt(mean(x^2) +
eps), type_as, * weight), wq/wk/wv, RoPE through complex multiplication in fp32, repeat_kv (expand + reshape), SDPA
with is_causal, wo; w2(silu(w1 x) * w3 x); two residual adds. The weights are bf16 as FSDP2's MixedPrecisionPolicy
gathers them (param_dtype bf16). Checkpointing as parallelisms/parallelize_llama.py at 9dec370 applies it: full is
ptd_checkpoint_wrapper (torch.utils.checkpoint, non-reentrant), selective "op" is its _save_list policy (every second
aten.mm, the flash attention kernel; on the CPU the kernel is _scaled_dot_product_flash_attention_for_cpu, listed
beside CUDA's), compile is torch.compile(block, fullgraph=True) after the checkpoint wrapper (apply_compile). With
torchao installed, each mode is listed again with its Float8 training on the block's linears (tensorwise, rowwise:
convert_to_float8_training, as torchtitan's float8 converter applies it); and at tp = 2 under 9dec370's
tensor-parallel plan (with tensorwise Float8, torchao's Float8 styles: rowwise has none), on a one-process fake
process group. Everything at two sets of widths: small ones,
and Llama 3 8B's own (the partitioner's choice depends on the widths' ratios). What torch raises is recorded as the
row's error.

The model's end is listed too (final norm, LM head, train.py's loss; at tp = 1 and 2 with loss_parallel); and a
block whose FeedForward is torchtitan 0.3.0's MoE (benchmarks/titan_moe.py: softmax top-2 without shared experts,
sigmoid top-3 with them; eager, each checkpointing mode under 0.3.0's SAC policy, at ep = 1 and at ep = 2 on the fake
group with torchtitan's balanced debug routing). A tensor is listed if it is still held when forward ends: one packed
by a node that died before backward (an op whose output was dropped) is not.

What differs from the benchmark's run (each line records torch's version and the device): this torch's partitioner,
not the 2024 nightly's; inductor's CPU backend (the partitioner is the same code for both devices, the kernels it
fuses into are not)."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys

import titan_block as titan  # benchmarks/titan_block.py (this script's folder is on sys.path)
import titan_moe  # benchmarks/titan_moe.py

# distinct sizes (each saved tensor's shape names it) in Llama 3's ratios (k/a = 1/4, f/h = 3.5 near 2.9), k/t > 1;
# and Llama 3 8B's own widths at a short sequence: the partitioner's cut depends on the widths' ratios
SIZES = {
    "small": dict(b=3, s=48, h=256, a=16, k=4, f=736, v=1000),
    "llama3-8b": dict(b=1, s=64, h=4096, a=32, k=8, f=14336, v=128256),
}
TP = 2  # the tensor-parallel listings' degree
# the MoE block's sizes (the attention's as "small"; _grouped_mm wants 16-byte strides): softmax top-2 of 8 experts with
# no shared experts (Mixtral's routing), and sigmoid top-3 of 16 with shared experts (DeepSeek-V3's)
MOE_SIZES = {
    "moe-softmax": dict(SIZES["small"], E=8, k_e=2, f_e=192, f_s=0, sigmoid=False),
    "moe-sigmoid-shared": dict(SIZES["small"], E=16, k_e=3, f_e=96, f_s=160, sigmoid=True),
}


def _per_token(shape: list, sizes: dict, t: int) -> bool:
    """Whether a saved tensor is an activation (a [b s, ...] or [b, ..., s, ...] tensor, s or b s over t where the
    sequence is sharded, or an MoE layer's [k_e b s, ...]), not a weight's cast or the checkpoint's RNG state."""
    b, s = sizes["b"], sizes["s"]
    routed = [b * s * sizes["k_e"]] if "k_e" in sizes else []  # an MoE layer's N = k_e b s rows
    return any(n in shape for n in (b * s, b * s // t, *routed)) or (
        b in shape and any(n in shape for n in (s, s // t))
    )


def _held(torch, t) -> list:
    """The plain tensors a saved tensor holds: a DTensor's local shard, a Float8TrainingTensor's FP8 data and scale
    (any traceable wrapper subclass's inner tensors), else the tensor itself."""
    from torch.distributed.tensor import DTensor
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if isinstance(t, DTensor):
        return _held(torch, t._local_tensor)
    if is_traceable_wrapper_subclass(t):
        names, _ = t.__tensor_flatten__()
        return [x for name in names for x in _held(torch, getattr(t, name))]
    return [t]


def _recorder(torch, module, x, sizes: dict, tp: int):
    """A pack hook, and a function listing what it saw that is still held (call it after forward, before backward):
    each storage once, the module's parameters and buffers left out. A tensor packed by a node that died before
    backward (an op whose output was dropped, as topk's values in the router) is not held, so not listed."""
    import weakref

    weights = {
        t.untyped_storage().data_ptr() for p in [*module.parameters(), *module.buffers()] for t in _held(torch, p)
    }
    packed = []

    def pack(tensor):
        packed.extend(weakref.ref(t) for t in _held(torch, tensor))
        return tensor

    def held() -> list:
        saved, seen = [], set()
        for ref in packed:
            t = ref()
            if t is None:
                continue
            ptr = t.untyped_storage().data_ptr()
            if ptr not in weights and ptr not in seen:
                seen.add(ptr)
                saved.append(
                    {
                        "shape": list(t.shape),
                        "dtype": str(t.dtype).removeprefix("torch."),
                        "bytes": t.untyped_storage().nbytes(),
                        "is_input": ptr == x.untyped_storage().data_ptr(),
                        "per_token": _per_token(list(t.shape), sizes, tp),
                    }
                )
        return saved

    return pack, held


def head_listing(torch, sizes: dict, tp: int = 1) -> dict:
    """What the model's end saves on one rank: the final RMSNorm, the LM head (bf16 [h, v]; at tp > 1 9dec370's
    ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1)) with the norm SequenceParallel) and train.py's
    loss, cross_entropy(pred.flatten(0, 1).float(), labels) (under loss_parallel at tp > 1), pred deleted before
    backward."""
    import contextlib

    from torch.distributed.tensor.parallel import loss_parallel

    torch.manual_seed(0)
    nn = torch.nn

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = titan.block(torch, sizes).attention_norm  # the same Python RMSNorm
            self.output = nn.Linear(sizes["h"], sizes["v"], bias=False)

        def forward(self, x):
            return self.output(self.norm(x))

    head = Head()
    for param in head.parameters():
        param.data = param.data.to(torch.bfloat16)
    if tp > 1:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Shard
        from torch.distributed.tensor.parallel import ColwiseParallel, SequenceParallel, parallelize_module

        parallelize_module(
            head,
            init_device_mesh("cpu", (tp,)),
            {
                "norm": SequenceParallel(),
                "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1), use_local_output=False),
            },
        )
    x = torch.randn(sizes["b"], sizes["s"] // tp, sizes["h"], dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, sizes["v"], (sizes["b"], sizes["s"]))
    pack, held = _recorder(torch, head, x, sizes, tp)
    with loss_parallel() if tp > 1 else contextlib.nullcontext():
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            pred = head(x)
            loss = torch.nn.functional.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
        del pred
        saved = held()
        loss.backward()
    return {"part": "head", "tp": tp, "tensors": saved, "bytes": sum(t["bytes"] for t in saved)}


def listing(torch, mode: str, compiled: bool, sizes: dict, float8: str = "none", tp: int = 1, ep: int = 1) -> dict:
    """The tensors one forward saves for backward on one rank: each storage once, the weights left out; a block with
    torchtitan 0.3.0's MoE (eager, tp = 1, checkpointed by 0.3.0's SAC policy, its experts over ep ranks of the fake
    group) where `sizes` has experts."""
    torch.manual_seed(0)
    moe = "E" in sizes
    block = (
        titan_moe.moe_block(torch, sizes, sizes["sigmoid"], sizes["f_s"] > 0, ep) if moe else titan.block(torch, sizes)
    )
    if float8 != "none":
        block = titan.float8(torch, block, float8)
    if tp > 1:
        block = titan.tensor_parallel(torch, block, tp, float8)
    caches: list = []
    fn = titan.checkpointed(torch, block, mode, caches, titan_moe.op_sac_context if moe else None)
    if compiled:
        torch._dynamo.reset()
        fn = torch.compile(fn, fullgraph=True)
    x = torch.randn(sizes["b"], sizes["s"] // tp, sizes["h"], dtype=torch.bfloat16, requires_grad=True)
    pack, held = _recorder(torch, block, x, sizes, tp)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(x)
    for cache in caches if not compiled else ():  # eager SAC's saved op outputs (compiled: traced, fake tensors)
        for outputs in cache.values():
            for wrapped in outputs.values():
                for leaf in torch.utils._pytree.tree_leaves(wrapped, is_leaf=lambda w: hasattr(w, "val")):
                    if isinstance(getattr(leaf, "val", None), torch.Tensor):
                        pack(leaf.val)
    saved = held()
    out.float().pow(2).mean().backward()  # the listing's tensors are those backward used
    source = {
        "block": "9dec370 TransformerBlock, its FeedForward torchtitan 0.3.0's MoE (benchmarks/titan_moe.py)",
        "ep": ep,
    }
    return {
        **(source if moe else {}),
        "part": "moe_block" if moe else "block",
        "mode": mode,
        "compiled": compiled,
        "float8": float8,
        "tp": tp,
        "tensors": saved,
        "bytes": sum(t["bytes"] for t in saved),
    }


def _row(torch, name: str, mode: str, compiled: bool, float8: str, tp: int, ep: int = 1) -> dict:
    """One listing at SIZES[name] (or MOE_SIZES[name]), or the one-line error torch raised (kept: what could not be
    listed is said)."""
    sizes = {**SIZES, **MOE_SIZES}[name]
    head = {"name": name, "sizes": sizes}
    try:
        return {**head, **listing(torch, mode, compiled, sizes, float8, tp, ep)}
    except Exception as err:  # noqa: BLE001 - recorded in the output, not raised
        moe = {"part": "moe_block", "ep": ep} if name in MOE_SIZES else {"part": "block"}
        return {
            **head,
            **moe,
            "mode": mode,
            "compiled": compiled,
            "float8": float8,
            "tp": tp,
            "error": f"{type(err).__name__}: {str(err).splitlines()[0][:300]}",
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out", default="records/torch-saved-cpu.jsonl")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_saved.py: needs torch (pip install torch), which mem4d does not depend on", file=sys.stderr)
        return 2
    torch.set_num_threads(2)
    try:
        import torchao
    except ImportError:
        torchao = None
    recipes = ("none", "tensorwise", "rowwise") if torchao is not None else ("none",)
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=TP)
    modes = ("none", "selective", "full")
    rows = [
        _row(torch, name, mode, compiled, float8, tp)
        for name in SIZES
        for tp in (1, TP)
        for float8 in (recipes if tp == 1 else recipes[:2])
        for compiled in (False, True)
        for mode in modes
    ]
    rows += [_row(torch, name, mode, False, "none", 1, ep) for name in MOE_SIZES for ep in (1, TP) for mode in modes]
    rows += [
        {"name": name, "sizes": SIZES[name], **head_listing(torch, SIZES[name], tp)} for name in SIZES for tp in (1, TP)
    ]
    dist.destroy_process_group()
    meta = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": "cpu",
        "date": datetime.date.today().isoformat(),
        "torchao": getattr(torchao, "__version__", None),
        "block": "torchtitan 9dec370 models/llama/model.py TransformerBlock, bf16 weights",
    }
    with open(args.out, "w") as out:
        out.writelines(json.dumps({**meta, **row}) + "\n" for row in rows)
    for row in rows:
        what = f"{len(row['tensors']):2} tensors {row['bytes']:11,} B" if "error" not in row else row["error"][:60]
        kind = (
            "head"
            if row.get("part") == "head"
            else f"{row['float8']:10} {row['mode']:9} compiled={row['compiled']!s:5}"
        )
        print(f"{row['name']:9} tp{row['tp']} {kind} {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
