"""Compiled step: parameter counts, argument breakdown vs XLA, remat ordering, ZeRO-1 (the CLI: test_jax_compile_cli.py).

Sources of truth: ModelShape.param_count (closed form checked against published counts) for the flax model's leaves;
XLA's memory_analysis() argument size for the breakdown computed from shardings (exact, 0 bytes tolerance).
"""

import dataclasses

import jax
import pytest

from conftest import skip_if_not_enough_devices
from tiny_shapes import tiny

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import PRESETS, ModelShape
from symbolic.config.training import Training

SHAPE = tiny("test", L=4)


def _compile(train: Training, shape: ModelShape = SHAPE):
    from jaxcheck.compile import QUICK_CPU, compile_step
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec

    skip_if_not_enough_devices(train.world)
    options = QUICK_CPU if jax.default_backend() == "cpu" else None
    return compile_step(StepSpec(shape, train).check(), make_mesh(train), compiler_options=options)


@pytest.mark.parametrize("name", ["llama3-8b", "llama3-70b", "llama2-7b"])
def test_param_count_of_presets_abstractly(name):
    """The abstract flax model (nothing allocated) has exactly ModelShape.param_count parameters."""
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec
    from jaxcheck.state import build, param_count

    train = Training(d=1, t=2, p=2, c=2, s=4096)
    skip_if_not_enough_devices(train.world)
    built = build(StepSpec(PRESETS[name], train).check(), make_mesh(train))
    assert param_count(built) == PRESETS[name].param_count


@pytest.mark.parametrize("tied", [False, True])
def test_breakdown_sums_to_xla_argument_bytes(tied):
    """params + optimizer + batch bytes from the shardings == XLA's argument size, exactly (tied and untied)."""
    shape = tiny("test", L=4, tied=tied)
    report, _, _ = _compile(Training(d=2, t=2, p=2, c=1, s=16, b=1, gbs=4, zero=0), shape)
    assert report.param_count == shape.param_count
    assert sum(report.arguments.values()) == report.xla["argument_bytes"]
    x = report.xla
    assert x["total_bytes"] == x["argument_bytes"] + x["output_bytes"] + x["temp_bytes"] - x["alias_bytes"]
    # donation: params and optimizer state come back in place, so they are aliased
    assert x["alias_bytes"] == report.arguments["params"] + report.arguments["optimizer"]


def test_zero1_shards_optimizer_over_data_and_context():
    """With d*c = 4, AdamW mu + nu take a quarter of the replicated size (count is 4 bytes, replicated)."""
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec
    from jaxcheck.state import argument_bytes, build

    base = Training(d=2, t=1, p=1, c=2, s=16, b=1, gbs=4, zero=0)
    skip_if_not_enough_devices(base.world)
    plain = argument_bytes(build(StepSpec(SHAPE, base).check(), make_mesh(base)))
    zero1_train = dataclasses.replace(base, zero=1)
    zero1 = argument_bytes(build(StepSpec(SHAPE, zero1_train).check(), make_mesh(zero1_train)))
    assert plain["optimizer"] == 2 * plain["params"] + 4
    assert zero1["optimizer"] == (2 * plain["params"]) // 4 + 4
    assert zero1["params"] == plain["params"]


def test_remat_policies_order_temp_bytes():
    """XLA temp bytes: full remat < selective < none, on a shape where activations dominate (s=128, m=2)."""
    temps = {}
    for policy in ("none", "selective", "full"):
        report, _, _ = _compile(Training(d=1, t=1, p=1, c=1, s=128, b=2, gbs=4, recompute=policy))
        temps[policy] = report.xla["temp_bytes"]
    assert temps["full"] < temps["selective"] < temps["none"], temps


def test_mesh_larger_than_devices_says_how_many():
    from jaxcheck.mesh import make_mesh

    have = len(jax.devices())
    with pytest.raises(ConfigError, match=f"needs {2 * have} devices, jax sees {have}"):
        make_mesh(Training(d=2 * have, s=16))


def test_an_xla_error_is_one_line_naming_the_configuration():
    """XLA's own error (here a compile option XLA:CPU does not have: its INVALID_ARGUMENT, raised by the same call as
    XLA:GPU's "Couldn't find output tile sizes") becomes CompileFailed: one line with the configuration and XLA's
    first line. Source of truth: the message XLA gives."""
    from symbolic.config.errors import CompileFailed

    train = Training(s=16, gbs=1, recompute="full", zero=0)
    with pytest.raises(CompileFailed) as failed:
        from jaxcheck.compile import compile_step
        from jaxcheck.mesh import make_mesh
        from jaxcheck.spec import StepSpec

        compile_step(StepSpec(SHAPE, train).check(), make_mesh(train), compiler_options={"xla_no_such_option": True})
    message = str(failed.value)
    assert "\n" not in message and message.startswith("XLA could not compile test d1 t1 p1 c1 s16 b1 gbs1 full zero0")
    assert "No such compile option: 'xla_no_such_option'" in message


def test_pipeline_moves_activations_not_weights():
    """Pure pipeline (p=2): stages exchange activations by collective-permute; no weight is all-gathered over pipe."""
    report, compiled, _ = _compile(Training(d=1, t=1, p=2, c=1, s=16, b=1, gbs=4))
    hlo = compiled.as_text()
    assert "collective-permute" in hlo
    assert "all-gather" not in hlo
    # each stage holds half the block parameters: params bytes < the unsharded model's fp32 bytes
    assert report.arguments["params"] < 4 * SHAPE.param_count


def test_measure_on_cpu_is_none_not_zero():
    """A fresh subprocess finds no device memory stats on CPU and says so with None (the spec survives JSON)."""
    from jaxcheck.measure import measure, spec_from_json, spec_to_json
    from jaxcheck.spec import JaxOptions, StepSpec

    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only behaviour")
    spec = StepSpec(SHAPE, Training(d=2, s=16, gbs=4, recompute="full"), JaxOptions(compute_dtype="float32"))
    assert spec_from_json(spec_to_json(spec)) == spec
    assert measure(spec) is None
