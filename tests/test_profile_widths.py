"""Each profile's byte widths: one registry (symbolic.profiles.WIDTHS) that estimate, latex and plan apply.

Source of truth for "jax": symbolic.profiles.jax.byte_widths() at jaxcheck's default dtypes (fp32 params, bf16 compute).
"""
import json
import subprocess
import sys

from symbolic.estimator.estimate import estimate
from symbolic.plan.enumerate import Cluster
from symbolic.plan.search import search
from symbolic.profiles import WIDTHS, widths
from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training


def test_jax_widths_match_the_jax_profile():
    from symbolic.profiles import jax as jax_profile

    assert WIDTHS["jax"] == jax_profile.byte_widths()


def test_paper_widths_are_the_training_defaults():
    t = Training()
    assert WIDTHS["paper"] == {"weight_bytes": t.weight_bytes, "grad_bytes": t.grad_bytes,
                               "opt_bytes": t.opt_bytes, "act_bytes": t.act_bytes}


def test_estimate_cli_uses_the_profile_widths():
    """`mem4d estimate --profile jax` counts fp32 params: 4 bytes x every parameter on one device (d=t=p=c=1)."""
    out = subprocess.run([sys.executable, "-m", "symbolic.cli", "estimate", "--profile", "jax", "--model", "tiny",
                          "--seq", "128", "--json"], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["bytes"]["params"] == 4 * PRESETS["tiny"].param_count
    assert report["config"]["opt_bytes"] == 8


def test_plan_jax_profile_has_no_virtual_stages_and_agrees_with_estimate():
    """Tolerance: exact bytes. jaxcheck compiles no interleaved schedule, so plan --profile jax lists vpp = 1 only."""
    cluster = Cluster(PRESETS["tiny"], gpus=8, s=256, gbs=16)
    plan = search(cluster, limit=2**40, profile="jax")
    assert plan.evaluated > 0 and set(plan.rows["vpp"].tolist()) == {1}
    for i in plan.order[:20]:
        config = plan.config(int(i))
        alone = estimate(PRESETS["tiny"], plan.training(int(i)), "jax")
        assert alone.bytes["total"] == config["bytes"]["total"]
        assert alone.training.weight_bytes == widths("jax")["weight_bytes"]
