"""Flags that do not apply are refused, and a refusal names the real reason: one line on stderr, nothing on stdout,
exit 2 (the CLI contract). Each case is one a new user met (the 2026-families issue's list).

Source of truth: the CLI contract and the rule table (symbolic/config/rules.py, the recipes' rows).
"""

import pytest

from symbolic.cli import main

PLAN = ["plan", "--gpus", "64", "--seq", "4096", "--gbs", "512"]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["estimate", "--optimizer", "adamw8bit", "--moment-dtype", "bf16"], "1-byte states whatever the dtype"),
        (["estimate", "--moe-capacity", "4"], "no routed experts, so a capacity factor does not apply"),
        ([*PLAN, "--moe-capacity", "4"], "no routed experts, so a capacity factor does not apply"),
        ([*PLAN, "--top", "5", "--all"], "--top 5 and --all"),
        (["latex", "-o", "report.pdf"], "ending in one of: .tex"),
        (["formula", "--recompute", "selective", "--recompute-modules", "moe_act"], "has no routed experts"),
        (
            ["formula", "--model", "llama3-8b", "--recompute", "selective", "--recompute-modules", "moe_act"],
            "has no routed experts",
        ),
        ([*PLAN, "--recipe", "torchtitan", "--zero", "1"], "FSDP2"),  # not "every factorisation breaks a ... rule"
        (["compile", "--model", "tiny", "--target-config", "MISSING"], "--target-config MISSING: no such file"),
        (["verify", "--model", "gpt2", "--target", "cpu"], "dropout"),  # not the vocabulary's divisibility
        (["estimate", "--profile", "jax", "--no-grad-accum-fusion"], "give it with --recipe megatron"),
    ],
)
def test_refused_in_one_line_naming_the_reason(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and needle in err, (out, err)


def test_plan_lists_factorisations_when_each_breaks_its_own_rule(capsys):
    """tiny on 9 GPUs at s = 250: cp breaks s % 2c, tp the heads, pp the layers, dp the batch; no one rule rules
    them all out, so the summary is the generic one and every factorisation is listed on stdout."""
    assert main(["plan", "--model", "tiny", "--gpus", "9", "--seq", "250", "--gbs", "8"]) == 2
    out, err = capsys.readouterr()
    assert "every factorisation breaks a divisibility rule" in err and err.count("\n") == 1
    assert "dp=1 tp=1 pp=1 cp=9: sequence length s=250" in out
