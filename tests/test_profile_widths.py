"""Each profile's byte widths: each recipe's precision (symbolic.recipes, Recipe.precision) that estimate, latex and plan apply.

Sources of truth: jaxcheck's default dtypes (fp32 params, bf16 compute: 4, 4, 8, 2 bytes) for "jax"; Megatron-LM's bf16
mixed precision as the paper counts it (2 + 4 + 12 bytes per parameter, bf16 activations) for "paper".
"""

import json
import subprocess
import sys

from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.plan.enumerate import Cluster
from symbolic.plan.search import search
from symbolic.recipes import widths
from symbolic.recipes.jax.step import jax_widths


def test_jax_widths_match_the_jax_steps_default_dtypes():
    from jaxcheck.spec import JaxOptions

    opts = JaxOptions()
    assert widths("jax") == jax_widths(opts.param_dtype, opts.compute_dtype)
    t = Training(**widths("jax"))
    assert (t.weight_bytes, t.grad_bytes, t.opt_bytes, t.act_bytes, t.logit_bytes) == (4, 4, 8, 2, 4)


def test_paper_widths_are_the_training_defaults():
    t = Training()
    assert Training(**widths("paper")) == t
    assert (t.weight_bytes, t.grad_bytes, t.opt_bytes, t.act_bytes, t.logit_bytes) == (2, 4, 12, 2, 4)


def test_estimate_cli_uses_the_profile_widths():
    """`mem4d estimate --profile jax` counts fp32 params: 4 bytes x every parameter on one device (d=t=p=c=1)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "symbolic.cli",
            "estimate",
            "--profile",
            "jax",
            "--model",
            "tiny",
            "--seq",
            "128",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
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
        assert alone.training.weight_bytes == Training(**widths("jax")).weight_bytes == 4
