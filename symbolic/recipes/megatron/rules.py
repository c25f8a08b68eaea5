"""Megatron-LM's flags refused by the other profiles: the megatron recipe's rows of the one rule table."""
from __future__ import annotations

from ...config.rules import Rule

RULES: tuple[Rule, ...] = (
    Rule("--recompute-modules: Megatron only", lambda x: x.recompute_modules == "core_attn",
         lambda x: (f"--recompute-modules {x.recompute_modules} is Megatron-Core's (--recipe megatron); jaxcheck's "
                    f"and the other recipes' selective policies are their own"), scope="!paper"),
    Rule("--no-grad-accum-fusion: Megatron only", lambda x: x.grad_accum_fusion,
         lambda x: ("--no-grad-accum-fusion is Megatron-LM's --no-gradient-accumulation-fusion: give it with --recipe "
                    "megatron"), scope="!paper"),  # every other profile: the recipes and jax
)
