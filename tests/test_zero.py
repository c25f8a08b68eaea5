"""ZeRO stages 0-3 in the paper profile: what each shards over d*c and the buffers stages 2 and 3 add.

Sources of truth: Rajbhandari et al. 2020 (ZeRO), table 1: per parameter, P_os keeps the optimizer states / N_d,
P_os+g also the gradients, P_os+g+p also the parameters (here N_d = d*c, the ranks that share a model replica);
the per-layer and embedding parameter counts of ModelShape (checked against published counts elsewhere). Tolerance:
exact (sympy identities, integer bytes).
"""

import json
import subprocess
import sys

import pytest
import sympy as sp

from symbolic.components.weights import embedding_params, head_params, layer_params, paper_params, stage_params
from symbolic.config.shapes import PRESETS
from symbolic.config.switches import Switches
from symbolic.config.symbols import B_g, B_o, B_w, c, d
from symbolic.config.training import Training
from symbolic.config.parallel import ZERO_STAGES
from symbolic.config.stages import STAGES
from symbolic.estimator.estimate import estimate
from symbolic.recipes import load

PAPER = load("paper")


def _parts(zero: int, stage: str | None = None, overheads: bool = False) -> dict[str, sp.Expr]:
    sw = Switches(zero=zero, overheads=overheads)
    parts = PAPER.components(sw) if stage is None else PAPER.stage_components(sw, stage)
    return {part.name: part.expr for part in parts}


@pytest.mark.parametrize("stage", [None, *STAGES])
def test_each_stage_shards_what_zero_says(stage):
    """Weights, gradients, optimizer states per GPU: B x params, divided by d*c from the stage that shards them."""
    params = paper_params() if stage is None else stage_params(stage)
    for zero in ZERO_STAGES:
        got = _parts(zero, stage)
        shard = {
            name: d * c if zero >= level else 1 for name, level in (("optimizer", 1), ("gradients", 2), ("weights", 3))
        }
        assert sp.simplify(got["weights"] - B_w * params / shard["weights"]) == 0, (zero, stage)
        assert sp.simplify(got["gradients"] - B_g * params / shard["gradients"]) == 0, (zero, stage)
        assert sp.simplify(got["optimizer"] - B_o * params / shard["optimizer"]) == 0, (zero, stage)


def test_zero_buffers_are_named_per_stage():
    """ZeRO-2 adds the gradients being reduce-scattered (and Megatron-LM FSDP's assumed all-gather bucket), ZeRO-3
    also the gathered weights; Megatron-Core's DDP and distributed optimizer (ZeRO 0, 1) reduce and gather their
    buckets in place in the grad and param buffers (megatron-core 0.16.1 param_and_grad_buffer.py): no bucket."""
    names = {zero: set(_parts(zero, overheads=True)) for zero in ZERO_STAGES}
    buffers = {"grad_reduce_buffer", "params_gathered", "dist_opt_allgather", "grad_buckets"}
    assert not names[0] & buffers and not names[1] & buffers
    assert {"grad_reduce_buffer", "dist_opt_allgather"} <= names[2] and "params_gathered" not in names[2]
    assert "params_gathered" in names[3] and not names[3] & {"grad_buckets", "dist_opt_allgather"}


def test_zero_buffers_hold_the_largest_unit_of_each_stage():
    """The unit being reduced: a layer, or the embedding / LM head where a stage holds one and it is larger; ZeRO-3
    (Megatron-FSDP) gathers that unit and prefetches behind it up to max(5e8, a layer's) parameters and one unit more,
    or the whole stage where that is smaller (megatron-core 0.16.1 megatron_fsdp.py: the communication unit
    max(1e9, 2 x a unit's mean), the all-gather prefetch half of it)."""
    unit = {
        "first": sp.Max(layer_params(), embedding_params()),
        "middle": layer_params(),
        "last": sp.Max(layer_params(), head_params()),
        "only": sp.Max(layer_params(), embedding_params() + head_params()),
    }
    for stage in STAGES:
        got = _parts(3, stage)
        window = sp.Min(stage_params(stage), 2 * unit[stage] + sp.Max(500_000_000, layer_params()))
        assert sp.simplify(got["grad_reduce_buffer"] - B_g * unit[stage]) == 0, stage
        assert sp.simplify(got["params_gathered"] - B_w * window) == 0, stage


def test_llama3_8b_buffers_in_bytes():
    """llama3-8b at t = 2: one layer is (2 h^2 (1 + k/a) + 3 h f)/t + 2 h = 109,060,096 parameters per GPU; the
    embedding v h / t = 262,668,288 is larger, so the first stage reduces the embedding. Megatron-FSDP gathers the
    unit in use and prefetches 5e8 parameters and one unit more behind it: first stage 2 x 262,668,288 + 5e8 =
    1,025,336,576 of its 8 x 109,060,096 + 262,668,288 = 1,135,149,056; a middle stage 2 x 109,060,096 + 5e8 =
    718,120,192 of its 872,480,768 (by hand; exact)."""
    x = PRESETS["llama3-8b"]
    layer = (2 * x.h**2 * (1 + x.k / x.a) + 3 * x.h * x.f) / 2 + 2 * x.h
    assert layer == 109_060_096 and x.v * x.h // 2 == 262_668_288
    result = estimate(x, Training(d=4, t=2, p=4, gbs=16, zero=3), overheads=False)
    first, middle = (s["bytes"] for s in result.stages[:2])
    assert first["grad_reduce_buffer"] == 4 * 262_668_288 and first["params_gathered"] == 2 * 1_025_336_576
    assert middle["grad_reduce_buffer"] == 4 * layer and middle["params_gathered"] == 2 * 718_120_192


def test_megatron_fsdp_gathers_a_small_stage_whole():
    """A stage under the 5e8-parameter prefetch (tiny at p = 1: its 6,066,432 parameters, 8 layers, untied 1024 x 256
    embedding and head) is held all-gathered whole, 2 bytes each (megatron-core 0.16.1 megatron_fsdp.py's
    max(1_000_000_000, ...) floor); MB-41 of ../shared/data/measured is such a run. Exact."""
    x = PRESETS["tiny"]
    result = estimate(x, Training(d=4, s=256, gbs=8, zero=3), overheads=False)
    only = result.stages[0]["bytes"]
    assert x.param_count < 500_000_000 and only["params_gathered"] == 2 * x.param_count


def test_zero_1_is_the_published_closed_form_and_the_default():
    """The distributed optimizer (ZeRO-1) is Training's default: the paper's 6 + 12/(d c) bytes per parameter."""
    assert Training().zero == 1
    got = _parts(1)
    total = got["weights"] + got["gradients"] + got["optimizer"]
    widths = {B_w: 2, B_g: 4, B_o: 12}
    assert sp.simplify(total.subs(widths) - (6 + sp.Integer(12) / (d * c)) * paper_params()) == 0


def test_more_sharding_never_holds_more_model_state():
    """Weights + gradients + optimizer states per GPU never grow with the stage (d*c >= 1); with d*c = 1 the stages
    hold the same states and differ only by their buffers."""
    x = PRESETS["llama3-70b"]
    states = []
    for zero in ZERO_STAGES:
        result = estimate(x, Training(d=8, t=8, p=4, s=4096, gbs=64, zero=zero), overheads=False)
        states.append(sum(result.bytes[name] for name in ("weights", "gradients", "optimizer")))
    assert states == sorted(states, reverse=True) and len(set(states)) == 4
    alone = [estimate(x, Training(t=8, p=10, s=4096, gbs=16, zero=zero), overheads=False) for zero in ZERO_STAGES]
    assert len({sum(r.bytes[n] for n in ("weights", "gradients", "optimizer")) for r in alone}) == 1


def mem4d(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symbolic.cli", *argv], capture_output=True, text=True, timeout=120)


def test_cli_zero_flags():
    """--zero 0..3 on estimate (aliases --dist-opt / --no-dist-opt for 1 / 0, refused when they disagree with --zero);
    a bad stage is one line, exit 2."""
    base = ["estimate", "--model", "tiny", "--dp", "2", "--seq", "256", "--json"]
    for zero in ZERO_STAGES:
        done = mem4d(*base, "--zero", str(zero))
        assert done.returncode == 0 and json.loads(done.stdout)["config"]["zero"] == zero, done.stderr
    assert json.loads(mem4d(*base, "--zero", "1", "--dist-opt").stdout)["config"]["zero"] == 1  # aliases that agree
    assert json.loads(mem4d(*base, "--no-dist-opt").stdout)["config"]["zero"] == 0
    done = mem4d(*base, "--zero", "3", "--dist-opt")  # that disagree: refused (issue 10), not the last one winning
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--zero" in done.stderr, done.stderr
    for argv in (["--zero", "4"], ["--zero", "two"]):
        done = mem4d(*base, *argv)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--zero" in done.stderr


def test_formula_prints_the_zero_buffers():
    done = mem4d("formula", "--zero", "3", "--json")
    assert done.returncode == 0, done.stderr
    by_name = {item["name"]: item for item in json.loads(done.stdout)["formulas"]}
    assert {"grad_reduce_buffer", "params_gathered"} <= set(by_name)
    assert "Max" in by_name["params_gathered"]["text"] and "FSDP" in by_name["params_gathered"]["doc"]
    assert "max" in by_name["grad_reduce_buffer"]["latex"]
    assert json.loads(done.stdout)["switches"]["zero"] == 3
