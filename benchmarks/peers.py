"""mem4d next to the estimators people use today, on the same configurations (the README's comparison).

    python benchmarks/peers.py [--megatron FILE]

Each peer is used where it is installed in this Python (pip install llm-analysis; deepspeed needs torch) and skipped
with a note otherwise; Megatron-LM's `megatron/training/theoretical_memory_usage.py` is loaded from a file you give
(a checkout of NVIDIA/Megatron-LM; nothing of it is copied here), with its two helpers from `.utils` stubbed. Every
figure is GiB per GPU as each tool reports it, and the seconds one evaluation takes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from symbolic.config.shapes import PRESETS  # noqa: E402
from symbolic.config.training import Training  # noqa: E402
from symbolic.estimator.estimate import estimate  # noqa: E402

GiB = 2**30
STATES = ("weights", "gradients", "optimizer")
# (label, model, training): A every tool can express (no CP); B adds context parallelism; C is pure data parallelism
CASES = [
    (
        "A llama3-70b d16 t8 p4 c1 s8192, SP, selective, ZeRO-1",
        "llama3-70b",
        Training(d=16, t=8, p=4, c=1, s=8192, b=1, gbs=1024, recompute="selective", zero=1),
    ),
    (
        "B llama3-70b d8 t8 p4 c2 s8192, SP, selective, ZeRO-1",
        "llama3-70b",
        Training(d=8, t=8, p=4, c=2, s=8192, b=1, gbs=1024, recompute="selective", zero=1),
    ),
    (
        "C llama3-8b d64 t1 p1 c1 s8192, ZeRO-1, full recompute",
        "llama3-8b",
        Training(d=64, t=1, p=1, c=1, s=8192, b=1, gbs=512, recompute="full", zero=1),
    ),
]


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def row(states, activations, total, seconds: float, note: str) -> dict:
    """A tool's bytes per GPU (model states, activations, their total; None where it gives none), seconds, a note."""
    return {"states": states, "activations": activations, "total": total, "seconds": seconds, "note": note}


def mem4d(shape, tr: Training) -> dict:
    est = estimate(shape, tr, "paper", overheads=False)  # warm: the lambdified estimator is cached after the first call
    est, seconds = timed(lambda: estimate(shape, tr, "paper", overheads=False))
    parts = (
        est.bytes if est.peak_from == "total" else next(s["bytes"] for s in est.stages if s["stage"] == est.peak_from)
    )
    states = sum(parts[n] for n in STATES)
    return row(
        states,
        parts["total"] - states,
        est.peak,
        seconds,
        f"the peak: {'the paper total' if est.peak_from == 'total' else 'the exact ' + est.peak_from + ' stage'}",
    )


def megatron(path: str | None, shape, tr: Training) -> dict:
    """megatron/training/theoretical_memory_usage.py, as `--use-distributed-optimizer --sequence-parallel
    --recompute-granularity selective` (or none) would call it."""
    if not path:
        return {"skip": "pass --megatron megatron/training/theoretical_memory_usage.py"}
    pkg = types.ModuleType("megatron_tmu")
    pkg.__path__ = [str(Path(path).parent)]
    utils = types.ModuleType("megatron_tmu.utils")
    utils.is_hybrid_model, utils.print_rank_0 = (lambda args: False), (lambda *a, **k: None)
    sys.modules.update({"megatron_tmu": pkg, "megatron_tmu.utils": utils})
    spec = importlib.util.spec_from_file_location("megatron_tmu.theoretical_memory_usage", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = types.SimpleNamespace(
        kv_channels=shape.h // shape.a,
        num_attention_heads=shape.a,
        hidden_size=shape.h,
        group_query_attention=True,
        num_query_groups=shape.k,
        num_experts=None,
        swiglu=True,
        moe_shared_expert_intermediate_size=None,
        mtp_num_layers=None,
        normalization="RMSNorm",
        multi_latent_attention=False,
        padded_vocab_size=shape.v,
        untie_embeddings_and_output_weights=not shape.tied,
        ffn_hidden_size=shape.f,
        num_layers=shape.L,
        moe_layer_freq=1,
        moe_ffn_hidden_size=None,
        moe_latent_size=None,
        moe_router_topk=1,
        add_bias_linear=False,
        expert_tensor_parallel_size=1,
        expert_model_parallel_size=1,
        pipeline_model_parallel_size=tr.p,
        tensor_model_parallel_size=tr.t,
        context_parallel_size=tr.c,
        world_size=tr.world,
        data_parallel_size=tr.d,
        use_distributed_optimizer=tr.zero >= 1,
        seq_length=tr.s,
        micro_batch_size=tr.b,
        virtual_pipeline_model_parallel_size=None if tr.vpp == 1 else tr.vpp,
        sequence_parallel=tr.sp,
        recompute_granularity=None if tr.recompute == "none" else tr.recompute,
    )
    (out, seconds) = timed(lambda: module.report_theoretical_memory(args, num_microbatches=tr.m))
    states, acts, total = (x * 2**20 for x in out)  # MB (2**20 bytes) in Megatron's report
    return row(states, acts, total, seconds, "no CP term; full recompute falls back to the formula without SP")


def llm_analysis(shape, tr: Training) -> dict:
    try:
        from llm_analysis.analysis import train
    except ImportError:
        return {"skip": "pip install llm-analysis"}
    if tr.c > 1:
        return {"skip": "no context parallelism (sp_size is Megatron's sequence parallelism over tp)"}
    config = {
        "name": shape.name,
        "num_layers": shape.L,
        "n_head": shape.a,
        "hidden_dim": shape.h,
        "vocab_size": shape.v,
        "max_seq_len": tr.s,
        "num_key_value_heads": shape.k,
        "ffn_embed_dim": shape.f,
        "expansion_ratio": shape.f / shape.h,
        "model_type": "llama",
    }  # without it f % h != 0 is refused
    levels = {"none": 0, "selective": 1, "full": 2}  # its ActivationRecomputation: NONE, SELECTIVE, FULL
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(config, handle)
    out, seconds = timed(
        lambda: train(
            model_name=handle.name,
            gpu_name="h100-sxm-80gb",
            dtype_name="w16a16e16",
            log_level="ERROR",
            batch_size_per_gpu=tr.b,
            global_batch_size=tr.global_batch,
            seq_len=tr.s,
            activation_recomputation=levels[tr.recompute],
            ds_zero=tr.zero,
            dp_size=tr.d,
            tp_size=tr.t,
            pp_size=tr.p,
            sp_size=tr.t if tr.sp else 1,
            total_num_gpus=tr.world,
            flash_attn=tr.flash_attn,
            mlp_gated_linear_units=True,
        )
    )
    states = out["(weight+op_state+grad)_memory_per_gpu"]
    return row(
        states,
        out["activation_memory_per_gpu"],
        out["(weight+op_state+grad+act)_memory_per_gpu"],
        seconds,
        "f = 3.5h needs expansion_ratio by hand",
    )


def deepspeed(shape, tr: Training) -> dict:
    """ZeRO-2 and ZeRO-3 model states without offload, pure data parallelism over every GPU (no TP, PP, CP)."""
    try:
        from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
        from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs
    except ImportError:
        return {"skip": "pip install deepspeed (needs torch)"}
    if tr.t * tr.p * tr.c > 1:
        return {"skip": "data parallelism only: no TP, PP or CP"}
    nodes, per_node = max(tr.world // 8, 1), min(tr.world, 8)
    (_, zero2), seconds = timed(
        lambda: estimate_zero2_model_states_mem_needs(shape.param_count, per_node, nodes, cpu_offload=False)
    )
    largest = shape.h * shape.v  # the embedding is the largest layer
    _, zero3, _ = estimate_zero3_model_states_mem_needs(
        shape.param_count, largest, per_node, nodes, cpu_offload=False, cpu_offload_params=False
    )
    return row(zero2, None, None, seconds, f"model states only: ZeRO-2 {zero2 / GiB:.2f}, ZeRO-3 {zero3 / GiB:.2f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--megatron", metavar="FILE", help="Megatron-LM's megatron/training/theoretical_memory_usage.py"
    )
    args = parser.parse_args()
    import contextlib
    import io

    print(f"{'case':58s} {'tool':14s} {'states':>8s} {'activ.':>8s} {'total':>8s} {'seconds':>9s}  note")
    for label, model, tr in CASES:
        shape = PRESETS[model]
        tools = {
            "mem4d": lambda: mem4d(shape, tr),
            "Megatron-LM": lambda: megatron(args.megatron, shape, tr),
            "llm-analysis": lambda: llm_analysis(shape, tr),
            "DeepSpeed": lambda: deepspeed(shape, tr),
        }
        for name, run in tools.items():
            with contextlib.redirect_stdout(io.StringIO()):  # the peers print their own reports
                row = run()
            if "skip" in row:
                print(f"{label:58s} {name:14s} {'-':>8s} {'-':>8s} {'-':>8s} {'-':>9s}  {row['skip']}")
                continue
            cells = ["-" if row[k] is None else f"{row[k] / GiB:8.2f}" for k in ("states", "activations", "total")]
            print(
                f"{label:58s} {name:14s} {cells[0]:>8s} {cells[1]:>8s} {cells[2]:>8s} {row['seconds']:9.5f}  "
                f"{row['note']}"
            )


if __name__ == "__main__":
    main()
