"""No benchmark rots silently: every benchmarks/*.py script runs here at a tiny size (its --tiny option or small
arguments) and must exit as it does for a user; the scripts that need torch, a GPU or the CUDA plugin are
argparse-checked (`--help`) and imported, and run only where what they need is installed (skipped with the reason
otherwise). A new script must be listed in one of the tables below (test_every_script_is_listed).

Source of truth: the scripts' own exit status and output. Exact: the exit status and a phrase each prints."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
# script -> (arguments at a tiny size, a phrase its output must hold); each runs in seconds on 2 cores
RUNS = {
    "bench_codegen.py": (["--tiny"], "derives each"),
    "bench_compile.py": (["--tiny"], "tiny cpu"),
    "bench_estimator.py": (["--tiny"], "numpy estimator"),
    "bench_first_plan.py": (["--tiny"], "slowest cold median: tiny"),
    "bench_sweep_interrupt.py": (["--tiny"], "exit 130, the line after"),
    "bench_formula.py": (["--tiny"], "mem4d formula"),
    "bench_plan.py": (["--tiny"], "configurations evaluated"),
    "bench_plan_top.py": (["--tiny"], "same 10 rows: True"),
    "golden.py": (["check", "--case", "est-paper-llama3-8b-d8t2"], "1 of 1 cases equal byte for byte"),
    "peers.py": ([], "mem4d"),
    "published.py": ([], "runs expressed"),
    "shipped_cache.py": (["check", "--quick"], "0 stale entries"),
    "published_megatron.py": (["--case", "MB-02"], "1 run: 1 answered"),  # the 22: test_published_megatron
    "published_titan.py": ([], "8 runs:"),
    "tuned.py": ([], "DeepSeekV3"),
    "throughput.py": (["--tiny"], "LLAMA3_8B"),
    "mfu.py": ([], "runs stated"),
}
# script -> (module it needs to run, why it is not run here without it): argparse-checked and imported only
NEEDS = {
    "hf_count.py": ("transformers", "builds the model with transformers' code on torch's meta device"),
    "torch_saved.py": ("torch", "lists what torch's autograd saves (minutes under inductor: run by hand)"),
    "gpu_check.py": (None, "measures a real GPU: without one it must stop with one line (test_gpu_check_refuses)"),
    "olmo2_saved.py": ("torch", "lists what OLMo 2's layer saves with torch and transformers (run by hand)"),
    "titan_versions.py": ("torch", "runs each torchtitan version's own block under saved-tensor hooks (run by hand)"),
    "vision_saved.py": ("torch", "lists what Qwen3-VL's vision tower saves with torch and transformers (run by hand)"),
    "vision_saved_llama4.py": ("torch", "lists what Llama 4's vision tower and projector save (run by hand)"),
    "vision_saved_gemma3.py": ("torch", "lists what Gemma 3's SigLIP tower and projector save (run by hand)"),
    "vision_saved_pixtral.py": ("torch", "lists what Mistral 3's Pixtral tower and projector save (run by hand)"),
    "router_saved_phimoe.py": ("torch", "lists what phimoe's and Mixtral's routers save (run by hand)"),
    "megatron_count_nas.py": (
        "megatron",
        "builds a DeciLM model with Megatron-Core's heterogeneous specs on torch's "
        "meta device (megatron-core 0.16.1 unpacked by hand: run by hand)",
    ),
    "expert_saved_gptoss.py": (
        "megatron",
        "lists what Megatron-Core's clamped quick-GeGLU of GPT-OSS's experts saves "
        "(megatron-core 0.16.1 unpacked by hand: run by hand)",
    ),
    "gemma4_saved.py": ("torch", "lists what each layer of a tiny Gemma 4 saves (run by hand)"),
    "vocab_pad_probe.py": (None, "compiles for an H100 target through the CUDA plugin (minutes a table)"),
}
LIBRARIES = (
    "titan_block.py",
    "titan_moe.py",
    "titan_loader.py",
    "saved_lines.py",
    "published_table.py",
    "throughput_dispatch.py",
    "throughput_rank.py",
    "nvidia_rows.py",
    "tuned_moe.py",
    "tuned_llama.py",
    "plan_goal.py",
    "throughput_recipes.py",
)  # no command


def _run(script: str, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, str(BENCH / script), *args]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, check=False, text=True, timeout=timeout)


def test_every_script_is_listed():
    scripts = {p.name for p in BENCH.glob("*.py")}
    assert scripts == set(RUNS) | set(NEEDS) | set(LIBRARIES), scripts ^ (set(RUNS) | set(NEEDS) | set(LIBRARIES))


@pytest.mark.parametrize("script", sorted(RUNS))
def test_runs_at_a_tiny_size(script):
    args, phrase = RUNS[script]
    done = _run(script, args)
    assert done.returncode == 0, f"{script} {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}"
    assert phrase in done.stdout, f"{script}: {phrase!r} not in its output:\n{done.stdout[-2000:]}"


@pytest.mark.parametrize("script", sorted(NEEDS))
def test_parses_its_arguments(script):
    done = _run(script, ["--help"], timeout=60)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr[-2000:]


@pytest.mark.parametrize("script", LIBRARIES)
def test_imports(script):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(script[:-3], BENCH / script)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    finally:
        sys.path.remove(str(BENCH))


def test_hf_count_counts_a_config():
    pytest.importorskip("torch", reason=NEEDS["hf_count.py"][1])
    pytest.importorskip("transformers", reason=NEEDS["hf_count.py"][1])
    done = _run("hf_count.py", [str(ROOT / "grids" / "models" / "gqa-2304.json")])
    assert done.returncode == 0 and '"parameters"' in done.stdout, done.stdout + done.stderr


def test_torch_saved_without_torch_says_so():
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed: torch_saved.py lists a block's tensors for minutes; run it by hand")
    done = _run("torch_saved.py", ["-o", os.devnull])
    assert (done.returncode, done.stderr.strip().splitlines()[-1:]) == (
        2,
        ["torch_saved.py: needs torch (pip install torch), which mem4d does not depend on"],
    )


def test_gpu_check_refuses_without_a_gpu(tmp_path):
    done = _run("gpu_check.py", ["--out", str(tmp_path), "--budget", "0"], timeout=120)
    if done.returncode == 0:
        pytest.skip("a GPU is visible: gpu_check.py started on it (--budget 0: no configuration measured)")
    assert done.returncode == 2 and "gpu_check: no GPU visible to jax" in done.stderr, done.stderr[-2000:]


def test_throughput_dispatch_names_the_configs_dispatcher():
    # each case read off its release's Megatron-Bridge config (moe_flex_dispatcher_backend, exact): Qwen3-30B-A3B on
    # B200 has none in v0.3.0 (26.02) and HybridEP from v0.3.1 (26.02.01); its H100 config of v0.3.0 sets DeepEP;
    # GPT-OSS on GB300 has none through v0.4.2; DeepSeek-V3 on B200 has none in v0.2.0 (25.11)
    sys.path.insert(0, str(BENCH))
    try:
        from throughput_dispatch import dispatcher
    finally:
        sys.path.remove(str(BENCH))
    row = lambda model, gpu, release: {"model": model, "gpu": gpu, "release": release}
    assert dispatcher(row("Qwen3_30B_a3B", "B200", "26.02")) == "alltoall"
    assert dispatcher(row("Qwen3_30B_a3B", "B200", "26.02.01")) == "hybridep"
    assert dispatcher(row("Qwen3_30B_a3B", "H100", "26.02")) == "deepep"
    assert dispatcher(row("GPT OSS 120B", "GB300", "26.04.01")) == "alltoall"
    assert dispatcher(row("DeepSeekV3 (w/ MTP)", "B200", "25.11")) == "alltoall"
