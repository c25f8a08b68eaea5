"""The report's step time: the configuration's components (seconds, closed forms) and its plan section ranked by the
step-time model, with the expert layout's columns and the first configuration's breakdown.

Source of truth: symbolic.time.evaluate.step_time (what `mem4d estimate --json` carries as `time`), printed to 4
decimals in the report; the plan's rows as plan.search ranks them.
"""

from symbolic.config.shapes import PRESETS
from symbolic.config.training import Training
from symbolic.plan.enumerate import Cluster
from symbolic.plan.ranking import StepTime
from symbolic.plan.search import search
from symbolic.render import sections
from symbolic.render.steptime_tex import breakdown, section
from symbolic.time.evaluate import step_time
from symbolic.time.systems import system

MOE = PRESETS["qwen3-30b-a3b"]


def test_section_lists_every_component_with_its_seconds_and_closed_form():
    training = Training(d=4, ep=4, s=1024, gbs=8)
    time = step_time(MOE, training, system("dgx-b200"))
    tex = "\n".join(section(time, MOE, training))
    for name, seconds in time["breakdown"].items():
        shown = r"\mathrm{" + name.replace("_", r"\_") + "}"
        if seconds:
            assert f"${shown}$ & {seconds:.4f}" in tex
        assert f"{shown} &= " in tex, name  # its closed form
    assert r"W_{\mathrm{hbm}}" in tex and "boldsymbol" not in tex  # sympy would read W_hbm as W with a bold h


def test_a_refused_model_is_one_line():
    assert breakdown({"refused": "Mamba-2 layers"}) == ["Step time: not stated (Mamba-2 layers)."]


def test_plan_section_ranked_by_time_shows_ep_etp_and_the_best_ones_breakdown():
    cluster = Cluster(MOE, gpus=4, s=1024, gbs=8)
    b200 = system("dgx-b200")
    result = search(cluster, 0.8 * 192 * 2**30, hw=StepTime(b200), keep_all=False)
    lines = sections.plan(result, 192 * 2**30, 0.8, None, top=3, system=b200)
    head = next(line for line in lines if line.startswith(r"\# & "))
    assert " & ep & etp & " in head and head.endswith(r"tokens/s/GPU \\ \hline \endhead")
    first = result.training(int(result.order[0]))
    time = step_time(MOE, first, b200)
    assert (
        abs(time["tokens_per_s_per_gpu"] - result.rows["score"][result.order[0]]) < 1e-6 * time["tokens_per_s_per_gpu"]
    )
    tail = "\n".join(lines[lines.index(r"\paragraph{The first one's step time}") :])
    assert f"{time['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU" in tail and f"{time['step_s']:.4f}" in tail
