"""Where NVIDIA's configuration of a tuned run sits among the configurations `mem4d plan` ranks for the run's cluster
(model, GPUs, s, gbs, FP8 recipe, system), by the step-time model and by the old proxy, and plan's best predicted
against the published figure: benchmarks/throughput.py --rank's columns and summary line."""

from __future__ import annotations

import statistics

from symbolic.config.errors import ConfigError
from symbolic.config.training import Training
from symbolic.time.evaluate import step_time


PLAN_THRESHOLD = 0.8  # plan's default --threshold: a configuration fits when its peak is under 0.8 x the card's memory


def card_bytes(name: str) -> int:
    """The card's memory as its mem4d name states it (h100-80gb: 80 GiB, plan's default --gpu-mem for H100)."""
    return int(name.rsplit("-", 1)[1].removesuffix("gb")) * 2**30


def plan_scores(shape, training, sys_, threshold: float) -> dict:
    """Every configuration plan searches for the row's cluster (model, GPUs, s, gbs, FP8 recipe) that fits on the
    system's card: their step-time tokens/s/GPU and proxy scores, and plan's best row."""
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.proxy import Hardware
    from symbolic.plan.proxy import terms as proxy_terms
    from symbolic.plan.ranking import StepTime
    from symbolic.plan.search import search

    cluster = Cluster(
        shape,
        gpus=training.d * training.t * training.p * training.c,
        s=training.s,
        gbs=training.gbs,
        fp8=training.fp8,
        fp8_param_gather=training.fp8_param_gather,
    )
    limit = threshold * card_bytes(sys_.card.name)
    plan = search(cluster, limit, profile="paper", hw=StepTime(sys_), keep_all=False)
    fit = plan.order
    proxy = proxy_terms(cluster, plan.rows, Hardware(), plan.policies)["score"][fit]
    return {
        "cluster": cluster,
        "limit": limit,
        "sys": sys_,
        "policies": plan.policies,
        "time": plan.rows["score"][fit],
        "proxy": proxy,
        "best": plan.training(fit[0]) if len(fit) else None,
    }


def nvidia_proxy(scores: dict, shape, training) -> float:
    """The proxy's score of NVIDIA's configuration (its recompute choice as plan names it, where plan searches it)."""
    import numpy as np

    from symbolic.config.training_checks import RECOMPUTE
    from symbolic.plan.proxy import Hardware
    from symbolic.plan.proxy import terms as proxy_terms

    par = training.parallel
    grid = vars(par) | {x: getattr(training, x) for x in ("vpp", "b", "zero")}
    grid |= {"m": training.gbs // (training.b * training.d)}
    grid |= {"recompute": RECOMPUTE.index(training.recompute), "max_layers": shape.L / training.p}
    grid = {k: np.atleast_1d(np.asarray(v, dtype=np.float64)) for k, v in grid.items()}
    keys = [(q.recompute, q.modules if q.recompute == "selective" else None) for q in scores["policies"]]
    mine = (training.recompute, training.recompute_modules if training.recompute == "selective" else None)
    policies = scores["policies"] if mine in keys else ()
    if policies:
        grid["policy"] = np.array([keys.index(mine)])
    return float(proxy_terms(scores["cluster"], grid, Hardware(), policies)["score"][0])


def plan_rank(shape, training, sys_, cache: dict, threshold: float = PLAN_THRESHOLD) -> dict:
    """NVIDIA's configuration among plan's fitting ones for its cluster: the share predicted strictly faster (percent,
    0 = plan's first) by the step-time model and by the proxy, whether it fits at plan's limit by mem4d's estimate,
    and plan's best predicted tokens/s/GPU; a one-line reason where plan cannot state the cluster."""
    from symbolic.estimator.estimate import estimate
    from symbolic.plan.why_not import shared_reason
    from symbolic.plan.search import policy_reason

    key = (
        shape,
        training.d * training.t * training.p * training.c,
        training.s,
        training.gbs,
        training.fp8,
        training.fp8_param_gather,
        sys_,
    )
    if key not in cache:
        cache[key] = plan_scores(shape, training, sys_, threshold)
    scores = cache[key]
    if not len(scores["time"]):
        c = scores["cluster"]
        why = policy_reason(c, "paper", (0, 1, 2, 3)) or shared_reason(c, "paper", (0, 1, 2, 3))
        return {"plan": f"plan states no fitting configuration: {why or 'none fits'}"}
    try:
        fits = estimate(shape, training).peak < scores["limit"]
    except ConfigError as err:  # NVIDIA's uneven layouts are not in the table: L % (pp vpp) != 0 is left unjudged
        fits = "not judged: " + str(err).split(":")[0]
    me = step_time(shape, training, scores["sys"])["tokens_per_s_per_gpu"]
    return {
        "fitting": len(scores["time"]),
        "fits": fits,
        "best": float(scores["time"].max()),
        "nvidia": me,
        "best_config": scores["best"],
        "time_pct": 100 * float((scores["time"] > me).mean()),
        "proxy_pct": 100 * float((scores["proxy"] > nvidia_proxy(scores, shape, training)).mean()),
    }


def label(t: Training | None) -> str:
    """A plan row as one short label."""
    if t is None:
        return ""
    modules = f"({t.recompute_modules})" if t.recompute == "selective" else ""
    return (
        f"d{t.d} t{t.t} p{t.p} c{t.c} vpp{t.vpp} ep{t.ep} etp{t.etp_size} b{t.b} zero{t.zero} "
        f"{t.recompute}{modules}{' uneven' if t.stage_layers else ''}"
    )


RANK_KEYS = (
    "plan_fitting",
    "nvidia_fits",
    "time_pct",
    "proxy_pct",
    "plan_best",
    "best_vs_published_pct",
    "best_vs_nvidia_predicted_pct",
    "plan_best_config",
)


def rank_cells(r: dict) -> tuple[str, ...]:
    """plan_rank's figures as RANK_KEYS' cells (the reason in the first where plan states none)."""
    if "plan" in r:
        return (r["plan"], *[""] * (len(RANK_KEYS) - 1))
    fits = r["fits"] if isinstance(r["fits"], str) else ("yes" if r["fits"] else "no")
    return (
        str(r["fitting"]),
        fits,
        f"{r['time_pct']:.2f}",
        f"{r['proxy_pct']:.2f}",
        f"{r['best']:.0f}",
        f"{100 * (r['best'] / r['published'] - 1):+.1f}",
        f"{100 * (r['best'] / r['nvidia'] - 1):+.1f}",
        label(r["best_config"]),
    )


def rank_summary(stated: list[dict]) -> str:
    """The issue's goals on the ranked rows: NVIDIA's configuration in the top 1 %, plan's best within 10 %."""
    ranked = [r for r in stated if "time_pct" in r]
    if not ranked:
        return "# rank: no row's cluster has a fitting configuration in plan"
    t, q = [r["time_pct"] for r in ranked], [r["proxy_pct"] for r in ranked]
    near = sum(r["best"] >= 0.9 * r["published"] for r in ranked)
    fit = [r["time_pct"] for r in ranked if r["fits"] is True]
    gain = statistics.median(100 * (r["best"] / r["nvidia"] - 1) for r in ranked)
    return (
        f"# rank in plan ({len(ranked)} rows; % of plan's fitting configurations predicted strictly faster): "
        f"step time median {statistics.median(t):.1f} %, top 1 % in {sum(x <= 1 for x in t)}, top 10 % in "
        f"{sum(x <= 10 for x in t)}; proxy median {statistics.median(q):.1f} %, top 1 % in "
        f"{sum(x <= 1 for x in q)}, top 10 % in {sum(x <= 10 for x in q)}; plan's best predicted >= 0.9 x "
        f"published in {near}, its prediction over NVIDIA's configuration's median {gain:+.1f} %; NVIDIA's "
        f"configuration fits at plan's limit in {len(fit)}"
        + (f" (step time median {statistics.median(fit):.1f} %, top 1 % in {sum(x <= 1 for x in fit)})" if fit else "")
    )
