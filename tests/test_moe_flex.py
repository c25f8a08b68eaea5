"""Megatron-Core's flex token dispatcher with DeepEP (--moe-dispatcher deepep), closed forms against hand
counts in the glossary's letters, and the reader's mapping of Megatron-LM's flex flags.

Source of truth: megatron-core 0.16.1 transformer/moe/token_dispatcher.py (MoEFlexTokenDispatcher, _DeepepManager:
setup_metadata's top-k, the multihot map and probabilities of the received tokens, the permute and its combine
mapping), fused_a2a.py (FusedDispatch keeps DeepEP's handle), DeepEP deep_ep/buffer.py (the intranode handle), and
TransformerConfig.__post_init__ (--moe-enable-deepep is the deepep backend). Exact: integer bytes, no tolerance."""

from pathlib import Path

import sympy as sp


def _parts(fn, *args) -> dict:
    return {c.name: c.expr for c in fn(*args)}


def test_deepep_buffers_and_state_by_hand():
    """The dispatch in flight: received tokens [N, h] beside their permuted rows [R, h]; per layer: fp32 + int64
    top-k [T, k_e t_e], int64 received indices [N, k_e t_e], fp32 + bool [N, E/e], int64 [R]; N taken at R."""
    from symbolic.components.moe import dispatch_buffers, routing_state
    from symbolic.config.switches import Switches
    from symbolic.config.symbols import B_a, C_f, E, b, c, e, h, k_e, s, t, t_e

    sw, L_moe = Switches(moe=True, dispatcher="deepep"), sp.Symbol("L_moe")
    T = s * b / (t * c)
    R = N = C_f * k_e * T * t_e
    assert sp.simplify(_parts(dispatch_buffers, sw)["moe_dispatch"] - B_a * h * (N + R)) == 0
    per_layer = 12 * T * k_e * t_e + 8 * N * k_e * t_e + 5 * N * E / e + 8 * R
    assert sp.simplify(_parts(routing_state, L_moe, sw)["moe_routing_state"] - L_moe * per_layer) == 0


def test_deepep_saved_tensors_by_hand():
    """What a layer keeps for backward changes only in the permute: int64 [N E/e + R] and DeepEP's handle (bool +
    int32 [T, t_e e], int32 [N]) in place of the all-to-all's int64 [T, E + k_e]."""
    from symbolic.components.moe import router_tensors
    from symbolic.config.switches import Switches
    from symbolic.config.symbols import C_f, E, b, c, e, k_e, s, t, t_e

    T = s * b / (t * c)
    N = R = C_f * k_e * T * t_e
    flex = sum(_parts(router_tensors, Switches(moe=True, dispatcher="deepep")).values())
    a2a = sum(_parts(router_tensors, Switches(moe=True)).values())
    want = 8 * (N * E / e + R) + 5 * T * t_e * e + 4 * N - 8 * T * (E + k_e)
    assert sp.simplify(flex - a2a - want) == 0


def _backend(**values) -> str:
    from symbolic.readers.megatron_table import Args
    from symbolic.readers.megatron_train import flex_backend

    return flex_backend(Args(Path("case.yaml"), values=values))


def test_flex_backend_read_as_megatron_core_sets_it():
    """flex with --moe-enable-deepep, or alone (deepep: --moe-flex-dispatcher-backend's default) -> deepep; flex with
    hybridep -> hybridep, which the reader refuses (not in MOE_DISPATCHERS); alltoall stays alltoall."""
    from symbolic.config.recipe_options import MOE_DISPATCHERS

    assert _backend(moe_token_dispatcher_type="flex", moe_enable_deepep=True) == "deepep"
    assert _backend(moe_token_dispatcher_type="flex") == "deepep"
    assert _backend(moe_token_dispatcher_type="flex", moe_flex_dispatcher_backend="hybridep") == "hybridep"
    assert _backend(moe_token_dispatcher_type="alltoall", moe_enable_deepep=True) == "alltoall"
    assert "deepep" in MOE_DISPATCHERS and "hybridep" not in MOE_DISPATCHERS


def _parsed(command: str, argv: list[str]):
    import importlib

    from symbolic.cli.parser import Parser

    module = importlib.import_module(f"symbolic.cli.{command}")
    parser = Parser(prog=f"mem4d {command}")
    module.add_arguments(parser)
    return module, parser.parse_args(argv)


def test_formula_and_plan_choose_the_dispatcher():
    """--moe-dispatcher reaches formula's switches and every plan row's Training (Cluster.held), as estimate's."""
    from symbolic.config.hfconfig import resolve_model
    from symbolic.plan.result import reference

    formula, args = _parsed("formula", ["--model", "tiny-moe", "--moe-dispatcher", "deepep"])
    args.profile = formula.profile_from_args(args)
    assert formula.switches_from_args(args).dispatcher == "deepep"
    plan, args = _parsed(
        "plan", ["--model", "tiny-moe", "--gpus", "4", "--seq", "64", "--gbs", "8", "--moe-dispatcher", "allgather"]
    )
    assert reference(plan._cluster(args, resolve_model("tiny-moe")), "paper").moe_dispatcher == "allgather"
    _, args = _parsed("plan", ["--model", "tiny-moe", "--gpus", "4", "--seq", "64", "--gbs", "8"])
    assert reference(plan._cluster(args, resolve_model("tiny-moe")), "paper").moe_dispatcher == "alltoall"
