"""Shared test setup: 16 simulated CPU devices for jaxcheck tests, set before jax starts its backend."""

import os
import shutil
import tempfile

import pytest

N_DEVICES = 16


# XLA's code generation at its quickest, for every compile of the test session (this process and the mem4d processes
# it starts): LLVM at -O0 without its expensive passes (what jaxcheck.compile.FAST_CPU asks of XLA:CPU anyway) and
# ptxas without optimisations for the deviceless GPU targets. Buffer assignment, where every figure verify and
# compile read comes from, is made before code generation: the memory analysis of XLA:GPU (H100 target) steps came
# out identical with and without these flags, and a test session takes about a third less time. And XLA:CPU's
# Eigen kernels on one thread each: the steps the tests run execute 16 simulated devices on 2 cores, where Eigen's
# thread pools only contend (test_jax_equivalence and test_jax_qwen: 85 -> 66 s, side by side, 2026-12-04); a
# runtime setting, XLA:CPU's memory analysis the same to the byte (tiny d2 t2 p2, llama3-8b d2 t2 p2 selective,
# mtp-mimo-1024 d2 p2 ZeRO-2: temp bytes equal with and without it).
QUICK_CODEGEN = (
    "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true "
    "--xla_gpu_disable_gpuasm_optimizations=true --xla_cpu_multi_thread_eigen=false"
)


# XLA's executables shared within one test session: jax's compilation cache in a folder made empty for the session
# (by the process pytest starts in; its pytest-xdist workers and the mem4d processes the tests start inherit it through
# the environment) and removed at its end, so a step two tests compile alike is compiled once per run and every run
# starts cold, as CI's does. The cache keys on the program, its devices and XLA's options: a hit returns the same
# executable, whose memory analysis is what the tests read.
SESSION_CACHE = "MEM4D_TEST_XLA_CACHE"


def _session_compile_cache() -> None:
    if SESSION_CACHE in os.environ:  # a worker of this session: the folder is its controller's
        return
    folder = tempfile.mkdtemp(prefix="mem4d-xla-cache-")
    os.environ.update(
        {
            SESSION_CACHE: folder,
            "JAX_COMPILATION_CACHE_DIR": folder,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        }
    )
    _session_compile_cache.made = folder


def pytest_unconfigure(config):
    folder = getattr(_session_compile_cache, "made", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


# Python's cyclic garbage collector, run less often in the test processes: what collection imported (jax, sympy,
# flax, the test modules) frozen out of its scans, and a collection of the youngest generation after 50,000 net
# allocations, not 700. Tracing and lowering jax programs allocate millions of short-lived objects: the default
# thresholds spent 2.1 of 58.8 CPU-seconds in 1,026 collections on test_jax_stages's verify of two stage programs,
# these 0.85 s in 328 (gc.callbacks, side by side, 2026-12-08). Collection only frees memory: no figure a test reads.
GC_THRESHOLDS = (50_000, 20, 20)


def pytest_configure(config):
    _session_compile_cache()
    import gc

    gc.set_threshold(*GC_THRESHOLDS)
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")  # deviceless GPU targets: no NVIDIA libraries
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {QUICK_CODEGEN}".strip()
    try:
        from jaxcheck.backend import import_jax

        jax = import_jax()  # without the CUDA plugin's notices of a missing driver
    except ImportError:  # the symbolic half never needs jax
        return
    jax.config.update("jax_platforms", "cpu")  # GPU targets compile deviceless; no GPU backend is started
    jax.config.update("jax_num_cpu_devices", N_DEVICES)


# the files that take longest, collected first (worker-seconds in a warm run with two workers on 2 cores, 2026-12-07,
# after the second merge of that day and the session's compilation cache: jax_moe 64, jax_equivalence 48, verify 40,
# notebook_crosscheck 37 (one test), jax_compile 37, jax_mla 31, jax_hybrid 30, jax_stages 27, signals 25,
# benchmarks 24, jax_distributed 24, report 22; the suite 680; every file of 4 s or more listed): with two workers
# taking whole files in turn (pyproject.toml: --no-loadscope-reorder, else xdist hands out the files with the most
# tests first), a long file last would leave one worker idle to the end
LONGEST_FIRST = (
    "test_jax_moe.py",
    "test_jax_equivalence.py",
    "test_verify.py",
    "test_notebook_crosscheck.py",
    "test_jax_compile.py",
    "test_jax_compile_cli.py",
    "test_jax_mla.py",
    "test_jax_hybrid.py",
    "test_jax_stages.py",
    "test_signals.py",
    "test_benchmarks.py",
    "test_jax_distributed.py",
    "test_report.py",
    "test_jax_qwen.py",
    "test_sweep.py",
    "test_cli_plan.py",
    "test_notebook.py",
    "test_verify_moe.py",
    "test_plan.py",
    "test_jax_gpt.py",
    "test_stages.py",
    "test_web.py",
    "test_cli_pipe.py",
    "test_cli_tables.py",
    "test_estimator.py",
    "test_cli_symbolic.py",
    "test_plan_best.py",
    "test_cli_names.py",
    "test_cli_hostile.py",
    "test_docs.py",
    "test_tied.py",
)


def pytest_collection_finish(session):
    import gc

    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: within a file, the written order


def skip_if_not_enough_devices(n: int):
    """Skip a test that needs n devices when the backend has fewer (e.g. a real single GPU)."""
    import jax

    if len(jax.devices()) < n:
        pytest.skip(f"needs {n} devices, have {len(jax.devices())}")


def a_split(L: int, p: int, vpp: int = 1) -> tuple[int, ...]:
    """One valid uneven split of L layers over p stages in chunks of vpp (L/p each when p vpp divides L, else the first
    stages a chunk more), what a plan row of an uneven kind stands for in the rule checks. Needs L % vpp == 0 and
    p vpp <= L."""
    chunks, extra = divmod(L // vpp, p)
    return tuple(vpp * (chunks + (rank < extra)) for rank in range(p))


@pytest.fixture
def tmp_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


os.environ.setdefault("MEM4D_NO_COLOR", "1")


def megatron_estimate(tmp_path, args: str, gpus: int) -> tuple[int, str, str]:
    """`mem4d estimate --megatron FILE --gpus N --json` in this process on a file of Megatron-LM arguments `args`:
    exit code, stdout, stderr."""
    import contextlib
    import io

    from symbolic.cli.entry import main

    path = tmp_path / "run.args"
    path.write_text(args)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["estimate", "--megatron", str(path), "--gpus", str(gpus), "--json"])
    return code, out.getvalue(), err.getvalue()


def quick(fn, *args):
    """fn jitted and compiled for these arguments with XLA:CPU's quickest options (jaxcheck.compile.QUICK_CPU): for
    tests of numerics and structure, where XLA's memory figures are not the subject."""
    import jax

    from jaxcheck.compile import QUICK_CPU

    options = QUICK_CPU if jax.default_backend() == "cpu" else None
    return jax.jit(fn).lower(*args).compile(compiler_options=options)


def quick_model(spec):
    """jaxcheck's CausalLM for a StepSpec, initialised by one quick program (an eager init compiles one per leaf)."""
    from flax import nnx

    from jaxcheck.model.causal_lm import CausalLM

    graphdef, _ = nnx.split(nnx.eval_shape(lambda: CausalLM(spec, nnx.Rngs(0))))
    return nnx.merge(graphdef, quick(lambda: nnx.split(CausalLM(spec, nnx.Rngs(0)))[1])())


def unsharded_reference(spec, gbs: int, dense_routed=None):
    """Host params ([1, n] stacks), a fixed batch [gbs, s], and the loss and gradients of the same flax modules run
    directly on one device over the whole batch (the layers in model order, each the next of its kind's stack; with
    `dense_routed`, the routed experts computed densely in place of jaxcheck.model.moe.routed_experts),
    differentiated by jax.grad: the source of truth of the sharded-step tests (spec: the unsharded StepSpec)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from flax import nnx

    import jaxcheck.model.moe
    from jaxcheck.mesh import make_mesh
    from jaxcheck.model.causal_lm import stack_layers
    from jaxcheck.model.mtp import MTP_LOSS_SCALE

    shape, seq = spec.shape, spec.train.s
    graphdef, state = nnx.split(quick_model(spec))
    params = jax.tree.map(np.asarray, nnx.to_pure_dict(state))
    tokens = np.asarray(jax.random.randint(jax.random.key(1), (gbs, seq), 0, shape.v, dtype=jnp.int32))
    targets = np.roll(tokens, -1, axis=-1)

    def loss(params):
        model = nnx.merge(graphdef, params)
        x, seen = model.embed_tokens(tokens), dict.fromkeys(stack_layers(shape), 0)
        for i in range(shape.L):  # each layer in model order from its stack: dense_blocks only where it is dense,
            # linear_blocks where it is a Gated DeltaNet layer
            name = (
                "linear_blocks"
                if i in shape.linear_layers
                else "blocks"
                if shape.is_moe_layer(i) or "dense_blocks" not in seen
                else "dense_blocks"
            )
            x = jax.tree.map(lambda w: w[0, seen[name]], getattr(model, name))(x)
            seen[name] += 1
        ce = lambda logits, t: jax.nn.logsumexp(logits, axis=-1) - jnp.take_along_axis(logits, t[..., None], -1)[..., 0]
        total, hidden = jnp.sum(ce(model.logits(x), targets)), x
        for k in range(shape.mtp):  # module k: the tokens k + 1 places on, predicting those k + 2 on, wrapped ones out
            module = getattr(model, f"mtp{k}")
            hidden = module(hidden, model.embed_tokens(np.roll(tokens, -(k + 1), axis=-1)))
            kept = ce(model.logits(hidden, module.final_norm), np.roll(tokens, -(k + 2), axis=-1))[:, : seq - k - 1]
            total = total + MTP_LOSS_SCALE / shape.mtp * jnp.sum(kept)  # mtp_loss_scaling_factor / n_mtp
        return total / targets.size

    with pytest.MonkeyPatch.context() as patch, jax.set_mesh(make_mesh(spec.train)):
        if dense_routed is not None:
            patch.setattr(jaxcheck.model.moe, "routed_experts", dense_routed)
        value, grads = quick(jax.value_and_grad(loss), params)(params)
    return params, tokens, targets, float(value), jax.tree.map(np.asarray, grads)


def restack(tree: dict, shape, p: int) -> dict:
    """[1, n, ...] stack leaves of a reference -> [p, n/p, ...], the sharded step's layout."""
    import jax

    from jaxcheck.model.causal_lm import stack_layers

    out = dict(tree)
    for name, (n, *_) in stack_layers(shape).items():
        out[name] = jax.tree.map(lambda w: w.reshape((p, n // p) + w.shape[2:]), tree[name])
    return out


def assert_step_matches(spec, reference, seq: int, atol=lambda ref: 2e-6) -> None:
    """The sharded step (spec's mesh, its ZeRO stage and schedule) from the unsharded reference's parameters and batch
    equals the reference: the loss within 1e-5 relative, each gradient within 1e-3 relative plus atol(ref) (the
    reference gradient's array; 2e-6 by default) after restacking the reference's layer stacks over p."""
    import jax
    import numpy as np

    from jaxcheck.compile import QUICK_CPU, compile_step
    from jaxcheck.mesh import make_mesh
    from jaxcheck.step import make_optimizer

    host, tokens, targets, ref_loss, ref_grads = reference
    shape, p, m = spec.shape, spec.train.p, spec.train.m
    _, step, built = compile_step(
        spec,
        make_mesh(spec.train),
        with_grads=True,
        compiler_options=QUICK_CPU if jax.default_backend() == "cpu" else None,
    )
    params_host = restack(host, shape, p)
    opt_host = jax.tree.map(np.asarray, quick(make_optimizer(spec).init, params_host)(params_host))
    params = jax.device_put(params_host, built.shardings["params"])
    opt_state = jax.device_put(opt_host, built.shardings["optimizer"])
    batch = jax.device_put(
        {"tokens": tokens.reshape(m, -1, seq), "targets": targets.reshape(m, -1, seq)}, built.shardings["batch"]
    )
    _, _, loss, grads = step(params, opt_state, batch)
    assert float(loss) == pytest.approx(ref_loss, rel=1e-5)
    want = restack(ref_grads, shape, p)
    for path, g in jax.tree_util.tree_leaves_with_path(grads):
        ref = want
        for key in path:
            ref = ref[key.key]
        np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-3, atol=atol(ref), err_msg=jax.tree_util.keystr(path))
