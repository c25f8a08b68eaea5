"""The rule table (symbolic.recipes.registry.TABLE of config.rules' rows): plan's masks, Training.check and jaxcheck's check read the same rules.

Sources of truth: `Training(...).check(shape)` for the paper profile and jaxcheck's own check
(`jaxcheck.spec.StepSpec(...).check()`, no compile) for the jax profile, one configuration at a time. Exact: the sets of
valid configurations must be equal, not close.
"""

import itertools
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcheck.spec import StepSpec
from plan_shapes import row_training

from rules_broken import ALLOWED, DENSE, ON_UNEVEN, broken
from symbolic.config.errors import ConfigError
from symbolic.config.rules import letters
from symbolic.config.shapes import PRESETS, ModelShape
from symbolic.config.training import Training
from symbolic.plan.enumerate import Cluster, factorisations, valid
from symbolic.plan.why_not import why_not
from symbolic.plan.search import search
from symbolic.recipes.registry import PROFILES, TABLE, select

RULES = TABLE  # the shared rows and every recipe's
SCOPES = {
    "all",
    *PROFILES,
    *("!" + name for name in PROFILES),
    *(group for name in PROFILES for group in PROFILES[name].groups),
}

SHAPES = [
    PRESETS["tiny"],  # h=256 f=688 a=16 k=4 L=8 v=1024
    ModelShape("prime-v", h=48, f=120, a=6, k=3, L=6, v=137),  # no t > 1 divides v: jax allows t = 1 only
    ModelShape("odd-dh", h=36, f=64, a=4, k=2, L=4, v=64),  # head width 9: jax allows nothing, paper does
]


def test_table_is_ordered_as_training_checks_it():
    """Within the rules of every profile, those on the training config alone come first (Training.__post_init__
    checks them, Training.check the model's), so the first rule a mask reports broken is the one Training names."""
    shared = select("all")
    assert [rule.model for rule in shared] == sorted(rule.model for rule in shared)
    assert all(rule.scope in SCOPES for rule in RULES) and len({rule.name for rule in RULES}) == len(RULES)
    assert [rule.name for rule in select("jax")][: len(shared)] == [rule.name for rule in shared]


def test_every_message_is_one_line_on_ints():
    """Even stages break every rule but those on uneven ones; uneven ones (2 entries for p = 3, odd with vpp = 2,
    summing to 3 of 4 layers, 6 chunks for 4 layers) every rule but the layer rule they replace."""
    shape = ModelShape("odd", h=36, f=64, a=4, k=2, L=4, v=64)
    even = ["vpp > 1 needs p > 1", *ON_UNEVEN, *DENSE, *ALLOWED, "even stages"]
    for split, holding in ((None, even), ((1, 2), ["vpp > 1 needs p > 1", "L % (p vpp)", *DENSE, *ALLOWED])):
        degrees = dict(d=3, t=3, p=3, c=3, vpp=2, s=1000, b=2, gbs=9, sp=True, zero=3, ep=2, etp_size=5)
        broken_ = broken(**degrees, stage_layers=split, recompute="none", schedule="gpipe")
        x = letters(broken_, shape)
        assert [rule.name for rule in RULES if rule.holds(x)] == sorted(
            holding, key=ORDER.index
        )  # p = 3: vpp > 1 cannot break too
        for rule in RULES:
            text = rule.message(x)
            assert text and "\n" not in text, rule.name


ORDER = [rule.name for rule in RULES]


def test_the_rules_of_experts_break_one_line_each():
    """A model with experts, shared experts, weightless q/k norms (Llama 4's) and expert biases (gpt-oss's) breaks
    each expert rule on its own (E = 6 not divisible by ep = 4, f_e = 10 by etp = 4, f_s = 6 by t = 4, t > 1 without
    SP), each in one line (jaxcheck's expert rules hold: ep | dp, etp = tp, every layer MoE); DeepSpeed's
    dense-model rule and torchtitan's MoE rules at tp > 1 and with --compile and --ac-every too."""
    shape = ModelShape(
        "moe", h=64, f=64, a=4, k=4, L=4, v=64, E=6, k_e=2, f_e=10, f_s=6, qk_norm="weightless", moe_bias=True
    )
    degrees = dict(d=4, t=4, p=1, c=1, vpp=1, s=64, b=1, gbs=4, sp=False, zero=1, ep=4, etp_size=4)
    broken_ = broken(**degrees, stage_layers=None, recompute="full", schedule="1f1b")
    x = letters(broken_, shape)
    failing = [rule.name for rule in RULES if not rule.holds(x) and rule.scope not in ("torchtitan", "deepspeed")]
    assert failing == ["E % e", "f_e % t_e", "f_s % t", "MoE with t > 1 needs SP"]  # the table's order: shared rows
    recipes = letters(SimpleNamespace(**{**vars(broken_), "compile": True, "ac_every": 2}), shape)
    own = [rule.name for rule in RULES if not rule.holds(recipes) and rule.scope in ("torchtitan", "deepspeed")]
    assert own == [
        "torchtitan: Llama blocks",
        "torchtitan MoE: tp = 1",
        "torchtitan MoE: eager",
        "torchtitan MoE: no --ac-every",
        "torchtitan: FSDP2",
        "torchtitan: --ac-every with selective",
        "deepspeed: dense models",
    ]  # the q/k norms; --zero 1 and --recompute full are not torchtitan's
    failing += own
    x = recipes
    for name in failing:
        rule = next(rule for rule in RULES if rule.name == name)
        text = rule.message(x)
        assert text and "\n" not in text and ("moe" in text or not rule.model), name


def _rows(grid: dict) -> list[dict]:
    return [{name: int(values[i]) for name, values in grid.items()} for i in range(len(grid["d"]))]


def _accepted_by_jaxcheck(cluster: Cluster) -> set[tuple]:
    """Brute force: every (d, t, p, c, vpp, b) that jaxcheck's own check accepts."""
    out = set()
    fac = factorisations(cluster.gpus)
    for d, t, p, c in zip(*(fac[x].tolist() for x in "dtpc")):
        for vpp, b in itertools.product(range(1, cluster.shape.L + 1), range(1, cluster.gbs + 1)):
            row = dict(d=d, t=t, p=p, c=c, vpp=vpp, b=b)
            try:
                StepSpec(cluster.shape, row_training(cluster, row)).check()
            except ConfigError:
                continue
            out.add((d, t, p, c, vpp, b))
    return out


@settings(max_examples=30, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    gpus=st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16]),
    s=st.sampled_from([64, 96, 128, 192, 256, 384, 1000]),
    gbs=st.integers(1, 16),
    sp=st.booleans(),
    flash_attn=st.booleans(),
)
def test_plan_and_jaxcheck_agree_on_random_clusters(shape, gpus, s, gbs, sp, flash_attn):
    """Every configuration `plan --profile jax` would evaluate passes jaxcheck's check, and it misses none; every
    configuration of `plan --profile paper` passes Training.check."""
    cluster = Cluster(shape, gpus=gpus, s=s, gbs=gbs, sp=sp, flash_attn=flash_attn)
    jax_rows = _rows(valid(cluster, "jax")[0])
    for row in jax_rows:
        StepSpec(shape, row_training(cluster, row)).check()
    assert {tuple(r[x] for x in ("d", "t", "p", "c", "vpp", "b")) for r in jax_rows} == _accepted_by_jaxcheck(cluster)
    for row in _rows(valid(cluster, "paper")[0]):
        row_training(cluster, row).check(shape)  # balanced rows with their most even split


def test_search_rows_of_the_jax_profile_pass_jaxcheck():
    """The rows `search` evaluates, as the Training each stands for (recompute, ZeRO and widths included)."""
    cluster = Cluster(PRESETS["tiny"], gpus=8, s=384, gbs=8)
    plan = search(cluster, limit=2**40, profile="jax")
    assert plan.evaluated > 0
    for i in range(plan.evaluated):
        StepSpec(cluster.shape, plan.training(i)).check()


def test_plan_jax_refuses_what_verify_refuses():
    """s = 1000 is no multiple of the flash block: no jax configuration is valid, and why_not names the rule on every
    factorisation, so plan names it once, on stderr, and lists nothing; the paper profile has valid ones (it models
    no flash block)."""
    cluster = Cluster(PRESETS["tiny"], gpus=8, s=1000, gbs=8)
    assert len(valid(cluster, "jax")[0]["d"]) == 0 and len(valid(cluster, "paper")[0]["d"]) > 0
    lines, total = why_not(cluster, "jax")
    assert len(lines) == total and all("flash attention runs over key blocks of 128" in line for line in lines)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "symbolic.cli",
            "plan",
            "--profile",
            "jax",
            "--model",
            "tiny",
            "--gpus",
            "8",
            "--seq",
            "1000",
            "--gbs",
            "8",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == "" and "flash attention runs over key blocks of 128" in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("mem4d plan: error: no valid 4D configuration")


def test_the_combined_1f1b_is_refused_where_megatron_core_asserts_or_at_pp_1():
    """--ep-overlap (Megatron-LM --overlap-moe-expert-parallel-comm): megatron-core 0.16.1 transformer_config.py
    asserts EP > 1 and vpp at pp > 1; pp 1's schedule (combined_1f1b_schedule_for_no_pipelining) is not modelled;
    other recipes have no such flag. One line each."""
    from symbolic.config.hfconfig import resolve_model
    from symbolic.estimator.estimate import estimate

    moe = resolve_model("tiny-moe")
    for training in (dict(p=1), dict(p=2), dict(p=2, vpp=2, ep=1)):
        with pytest.raises(ConfigError, match="the combined 1F1B") as err:
            estimate(moe, Training(d=2, gbs=16, ep_overlap=True, **{"ep": 2, **training}))
        assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="Megatron-LM's --overlap-moe-expert-parallel-comm"):
        estimate(moe, Training(d=2, p=2, vpp=2, ep=2, gbs=16, ep_overlap=True), profile="torchtitan")
    assert estimate(moe, Training(d=2, p=2, vpp=2, ep=2, gbs=16, ep_overlap=True)).peak > 0
