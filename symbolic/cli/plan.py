"""`mem4d plan`: every 4D configuration of a cluster that fits in threshold x GPU memory, ranked by a throughput proxy."""

from __future__ import annotations

import argparse
import sys

from ..config.errors import ConfigError
from ..config.parallel import ZERO_STAGES
from ..plan.enumerate import Cluster
from ..plan.why_not import why_not
from ..plan.policies import label_of
from ..plan.proxy import Hardware, explain
from ..flags.precision import precision_from_args
from ..flags.training import card_from_args, model_from_args, profile_from_args
from ..flags.plan_files import HELD_RECIPE, READERS, plan_file
from .args import check_output_file
from .plan_args import TOP, add_job_args, add_output_args, add_row_args, add_search_args
from .plan_output import print_file, write_csv, write_json
from .plan_table import layers_text, print_table

GiB = 2**30
MAX_WHY_LINES = 40


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """plan's arguments, by group (plan_args.py)."""
    add_job_args(parser)
    add_search_args(parser)
    add_row_args(parser)
    add_output_args(parser)


def run(args: argparse.Namespace) -> int:
    files = any(getattr(args, reader) for reader in READERS)
    shape, said = plan_file(args) if files else (model_from_args(args), None)  # a file may set --recipe
    args.profile = profile_from_args(args)
    _check_flags(args)
    cluster = _cluster(args, shape)
    hw = _ranker(args, shape, Hardware(gpus_per_node=args.gpus_per_node))
    zero = ZERO_STAGES if args.zero is None else (args.zero,)
    limit = args.threshold * args.gpu_mem
    accounted = args.account_embedding or args.account_loss  # Megatron-Core places the layers: no other split
    if args.all or args.csv or args.plot:  # every row: all of them listed, written or drawn
        from ..plan.search import search

        plan = search(
            cluster, limit, profile=args.profile, hw=hw, zero=zero, keep_all=bool(args.plot), balance=not accounted
        )
    else:  # the --top K alone, exactly, without evaluating every row
        from ..plan.best import best

        plan = best(cluster, limit, args.top, profile=args.profile, hw=hw, zero=zero, balance=not accounted)
    if plan.evaluated == 0:
        _nothing_valid(args, shape, cluster, zero)
    if args.json:
        write_json(plan, args, sys.stdout, said)
    elif len(plan.order):
        if args.explain:
            print(explain(getattr(hw, "hw", hw)))  # the proxy's Hardware (a StepTime ranker carries it)
        print_table(plan, args)
        if getattr(hw, "system", None) is not None:
            _print_best_time(plan, hw.system)
    if said and not args.json:
        print_file(shape, said)
    if args.csv:
        write_csv(plan, args.csv)
    if args.plot:
        from ..plan.plot import plot

        plot(plan, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    if len(plan.order) == 0:
        lowest = plan.rows["peak"].argmin()
        print(
            f"mem4d plan: no configuration fits in {plan.limit / GiB:.1f} GiB; the smallest needs "
            f"{plan.rows['peak'][lowest] / GiB:.1f} GiB ({_label(plan.config(lowest)['config'])})",
            file=sys.stderr,
        )
        return 1
    return 0


def _print_best_time(plan, system) -> None:
    """The first row's step time, component by component (estimate's table of it), under plan's table."""
    from ..render.console import Console
    from ..time.evaluate import step_time
    from .steptime import print_block

    console = Console()
    console.print(f"the first one's step time (row 1, {_label(plan.config(int(plan.order[0]))['config'])}):")
    print_block(console, step_time(plan.cluster.shape, plan.training(int(plan.order[0])), system))


def _check_flags(args: argparse.Namespace) -> None:
    """The flags plan refuses together or without what they need (one line each); --top's default."""
    if args.all and args.top is not None:
        raise ConfigError(f"--top {args.top} and --all: give one (--all lists every feasible configuration)")
    args.top = TOP if args.top is None else args.top
    if args.csv:
        check_output_file(args.csv, "--csv")
    if args.plot:
        from ..plan.plot import formats

        check_output_file(args.plot, "--plot", formats())
    if args.override and not args.torchtitan:
        raise ConfigError("--override sets a key of a --torchtitan job file: give the file")
    if args.torchtitan_version and not args.torchtitan:
        raise ConfigError("--torchtitan-version names the torchtitan a --torchtitan job file ran on: give the file")
    missing = [f"--{key}" for key in ("seq", "gbs") if getattr(args, key) is None]
    if missing:
        raise ConfigError(f"the following arguments are required: {', '.join(missing)} (or a trainer's file)")


def _cluster(args: argparse.Namespace, shape) -> Cluster:
    """The search's cluster and what every row shares, from the flags (and a trainer's file)."""
    return Cluster(
        shape,
        gpus=args.gpus,
        s=args.seq,
        gbs=args.gbs,
        sp=args.sp,
        flash_attn=args.flash_attn,
        moe_capacity=args.moe_capacity,
        fp8=args.fp8,
        fp8_param_gather=args.fp8_param_gather,
        compile=args.compile,
        fp8_all_gather=args.fp8_all_gather,
        image_tokens=args.image_tokens,
        freeze_vision=args.freeze_vision,
        precision=tuple(precision_from_args(args, None).items()),
        held=tuple((name, getattr(args, name)) for name in HELD_RECIPE if hasattr(args, name))
        + ((("gpu", card_from_args(args)),) if args.system else ()),  # --system's card sizes the cuBLAS workspaces
        ep=args.ep,
        etp=args.etp,
    )


def _nothing_valid(args: argparse.Namespace, shape, cluster: Cluster, zero: tuple[int, ...]) -> None:
    """No configuration is valid: one line naming the rule that rules out everything, or (each factorisation's rule
    listed on stdout) that every factorisation breaks one."""
    where = f"no valid 4D configuration of {shape.name} on {args.gpus} GPUs with s={args.seq}, gbs={args.gbs}"
    from ..plan.why_not import shared_reason
    from ..plan.search import policy_reason

    reason = policy_reason(cluster, args.profile, zero) or shared_reason(cluster, args.profile, zero)
    if reason:  # one rule rules out everything (a flag, not a factorisation): name it, list nothing
        raise ConfigError(f"{where}: {reason}")
    if not args.json:
        _print_why_not(cluster, args.profile, zero)
    raise ConfigError(
        f"{where}: every factorisation breaks a divisibility rule" + ("" if args.json else " (each listed on stdout)")
    )


def _ranker(args, shape, proxy: Hardware):
    """--rank-by: the step-time model on --system (plan.ranking.StepTime) or the proxy's Hardware; one line when
    the step-time model cannot state the model or recipe."""
    from ..time.evaluate import refusal
    from ..time.systems import system

    stated = args.profile == "paper" and refusal(shape) is None
    args.rank_by = args.rank_by or ("time" if stated else "proxy")
    if args.rank_by == "proxy":
        if args.system is not None:
            raise ConfigError("--system chooses the step-time model's system: it needs --rank-by time")
        return proxy
    if not stated:
        why = refusal(shape) or f"it follows Megatron-Core, not profile {args.profile}"
        raise ConfigError(f"--rank-by time: {why}; use --rank-by proxy")
    from ..plan.ranking import StepTime

    return StepTime(system(args.system or "dgx-h100"), proxy)


def _print_why_not(cluster: Cluster, profile: str, zero: tuple[int, ...]) -> None:
    """Which rule rules out each factorisation, on stdout (stderr keeps its one error line)."""
    lines, total = why_not(cluster, profile, limit=MAX_WHY_LINES, zero=zero)
    print(f"every factorisation d*t*p*c = {cluster.gpus} breaks a rule (with vpp=1, mbs=1, the least constrained):")
    for line in lines:
        print("  " + line)
    if total > len(lines):
        print(f"  ... and {total - len(lines)} more factorisations")


def _label(config: dict) -> str:
    split = f" stage_layers={layers_text(config['stage_layers'])}" if config["stage_layers"] else ""
    experts = f" ep={config['ep']} etp={config['etp']}" if "ep" in config else ""
    return (
        f"dp={config['dp']} tp={config['tp']} pp={config['pp']} cp={config['cp']}{experts} vpp={config['vpp']} "
        f"mbs={config['mbs']} recompute={label_of(config)} zero={config['zero']}{split}"
    )
