"""`mem4d plan`: every 4D configuration of a cluster that fits in threshold x GPU memory, ranked by a throughput proxy."""
from __future__ import annotations

import argparse
import csv
import json
import sys

from ..config import precision
from ..config.errors import ConfigError
from ..config.training import ZERO_STAGES
from ..plan.enumerate import Cluster, why_not
from ..plan.policies import label_of
from ..plan.proxy import Hardware, explain
from ..flags.precision import add_precision_args, precision_from_args
from ..flags.switches import add_zero_aliases
from ..flags.training import add_model_args, add_recipe_arg, add_vision_args, model_from_args, profile_from_args
from ..flags.files import add_megatron_arg, add_trainer_args
from ..flags.plan_files import HELD_RECIPE, READERS, plan_file
from ..flags.values import capacity, positive_int
from ..render.files import replaced
from .args import add_fit_args, check_output_file
from .plan_table import SEARCHED, layers_text, print_table, searched, shown

GiB = 2**30
MAX_WHY_LINES = 40
TOP = 10  # rows plan shows by default


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_args(parser)
    parser.add_argument("--gpus", type=positive_int, required=True, metavar="N", help="GPUs in the job, d*t*p*c")
    parser.add_argument("--gpus-per-node", type=positive_int, default=8, metavar="G",
                        help="GPUs per node; groups wider than a node pay inter-node bandwidth")
    add_fit_args(parser)
    parser.add_argument("--seq", type=positive_int, metavar="S", help="sequence length s (required, or --megatron's)")
    parser.add_argument("--gbs", type=positive_int, metavar="G",
                        help="global batch in sequences (required, or --megatron's)")
    add_recipe_arg(parser)
    parser.add_argument("--top", type=positive_int, default=None, metavar="K",
                        help=f"rows in the table and in --json (default: {TOP})")
    parser.add_argument("--all", action="store_true",
                        help="every feasible row, in the table or --json (streamed there one row at a time)")
    parser.add_argument("--no-sp", dest="sp", action="store_false", help="disable sequence parallelism")
    parser.add_argument("--zero", type=int, choices=ZERO_STAGES, default=None,
                        help="search only this ZeRO stage, 0 to 3 (default: every stage)")
    add_zero_aliases(parser)
    parser.add_argument("--no-flash-attn", dest="flash_attn", action="store_false",
                        help="keep s x s attention scores and softmax for backward")
    parser.add_argument("--moe-capacity", type=capacity, default=1.0, metavar="C_f",
                        help="a model with experts: tokens an expert receives over an even share (capacity factor, "
                             "or a dropless run's imbalance); plan searches ep in divisors(E) and etp in {1, tp}")
    parser.add_argument("--ep", type=positive_int, default=None, metavar="E",
                        help="search only this expert parallel size e (default: every divisor of the routed experts)")
    parser.add_argument("--etp", type=positive_int, default=None, metavar="T",
                        help="search only this expert tensor parallel size t_e (default: 1 and tp)")
    parser.add_argument("--fp8", default="none", choices=tuple(precision.FP8_RECIPES),
                        help="FP8 in every row: --recipe megatron, Transformer Engine's (Megatron-LM --fp8-recipe "
                             "delayed|tensorwise|blockwise|mxfp8, or nvfp4); --recipe torchtitan, torchao's Float8 "
                             "(tensorwise|rowwise) (default none)")
    parser.add_argument("--fp8-param-gather", action="store_true",
                        help="--recipe megatron with --fp8 delayed, tensorwise or mxfp8: FP8 weights in every row")
    parser.add_argument("--fp8-all-gather", action="store_true",
                        help="--recipe torchtitan with --fp8 tensorwise: FSDP2 gathers FP8 weights in every row")
    parser.add_argument("--compile", action="store_true",
                        help="--recipe torchtitan: every row's blocks under torch.compile (torchtitan's "
                             "--compile.enable)")
    add_vision_args(parser)
    parser.add_argument("--account-for-embedding", dest="account_embedding", action="store_true",
                        help="--recipe megatron: every row counts the embedding as a pipeline unit (Megatron-Core's "
                             "--account-for-embedding-in-pipeline-split; L + 1 units over pp x vpp, even stages)")
    parser.add_argument("--account-for-loss", dest="account_loss", action="store_true",
                        help="--recipe megatron: every row counts the loss as a pipeline unit")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the --top (or --all) configurations as JSON")
    out.add_argument("--csv", metavar="FILE", help="also write every feasible configuration to a CSV file")
    parser.add_argument("--plot", metavar="FILE.png", help="draw peak memory over (tp, pp) for the best cp "
                        "(png, pdf, svg or another format matplotlib writes)")
    parser.add_argument("--explain", action="store_true", help="print the ranking proxy's formulas and terms")
    parser.add_argument("--rank-by", choices=("time", "proxy"), default=None,
                        help="time: the step-time model's predicted tokens/s/GPU on --system (default with --recipe "
                             "megatron); proxy: the alpha-beta proxy (the default for the other recipes)")
    parser.add_argument("--system", default=None, metavar="NAME",
                        help="the system --rank-by time predicts for (dgx-a100, dgx-h100, ..., gb300-nvl72, or a "
                             ".toml file; default dgx-h100)")
    add_precision_args(parser)
    g = parser.add_argument_group("a run as its trainer holds it: the model and what every row shares (sequence, "
                                  "global batch, precision, FP8, compile, sp, flash attention, capacity) from the "
                                  "file; its parallel sizes, micro batch, recompute and ZeRO searched")
    add_megatron_arg(g)
    add_trainer_args(g)


def run(args: argparse.Namespace) -> int:
    files = any(getattr(args, reader) for reader in READERS)
    shape, said = plan_file(args) if files else (model_from_args(args), None)  # a file may set --recipe
    args.profile = profile_from_args(args)
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
    cluster = Cluster(shape, gpus=args.gpus, s=args.seq, gbs=args.gbs, sp=args.sp, flash_attn=args.flash_attn,
                      moe_capacity=args.moe_capacity, fp8=args.fp8, fp8_param_gather=args.fp8_param_gather,
                      compile=args.compile, fp8_all_gather=args.fp8_all_gather,
                      image_tokens=args.image_tokens, freeze_vision=args.freeze_vision,
                      precision=tuple(precision_from_args(args, None).items()),
                      held=tuple((name, getattr(args, name)) for name in HELD_RECIPE if hasattr(args, name)),
                      ep=args.ep, etp=args.etp)
    hw = _ranker(args, shape, Hardware(gpus_per_node=args.gpus_per_node))
    zero = ZERO_STAGES if args.zero is None else (args.zero,)
    limit = args.threshold * args.gpu_mem
    accounted = args.account_embedding or args.account_loss  # Megatron-Core places the layers: no other split
    if args.all or args.csv or args.plot:  # every row: all of them listed, written or drawn
        from ..plan.search import search

        plan = search(cluster, limit, profile=args.profile, hw=hw, zero=zero, keep_all=bool(args.plot),
                      balance=not accounted)
    else:  # the --top K alone, exactly, without evaluating every row
        from ..plan.best import best

        plan = best(cluster, limit, args.top, profile=args.profile, hw=hw, zero=zero, balance=not accounted)
    if plan.evaluated == 0:
        where = f"no valid 4D configuration of {shape.name} on {args.gpus} GPUs with s={args.seq}, gbs={args.gbs}"
        from ..plan.enumerate import shared_reason
        from ..plan.search import policy_reason

        reason = policy_reason(cluster, args.profile, zero) or shared_reason(cluster, args.profile, zero)
        if reason:  # one rule rules out everything (a flag, not a factorisation): name it, list nothing
            raise ConfigError(f"{where}: {reason}")
        if not args.json:
            _print_why_not(cluster, args.profile, zero)
        raise ConfigError(f"{where}: every factorisation breaks a divisibility rule"
                          + ("" if args.json else " (each listed on stdout)"))
    if args.json:
        _write_json(plan, args, sys.stdout, said)
    elif len(plan.order):
        if args.explain:
            print(explain(getattr(hw, "hw", hw)))  # the proxy's Hardware (a StepTime ranker carries it)
        print_table(plan, args)
    if said and not args.json:
        _print_file(shape, said)
    if args.csv:
        _write_csv(plan, args.csv)
    if args.plot:
        from ..plan.plot import plot

        plot(plan, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    if len(plan.order) == 0:
        lowest = plan.rows["peak"].argmin()
        print(f"mem4d plan: no configuration fits in {plan.limit / GiB:.1f} GiB; the smallest needs "
              f"{plan.rows['peak'][lowest] / GiB:.1f} GiB ({_label(plan.config(lowest)['config'])})", file=sys.stderr)
        return 1
    return 0


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
    return (f"dp={config['dp']} tp={config['tp']} pp={config['pp']} cp={config['cp']}{experts} vpp={config['vpp']} "
            f"mbs={config['mbs']} recompute={label_of(config)} zero={config['zero']}{split}")



def _print_file(shape, said: dict) -> None:
    """plan --megatron: what came from the file, what plan searched in its stead, what the command line overrode."""
    held = " ".join(f"{key}={value}" for key, value in said["held"].items())
    searched = " ".join(f"{key}={value}" for key, value in said["searched"].items())
    print(f"{said['file']}: " + (f"the model ({shape.name}), " if said["model"] else "") + f"{held} from the file; "
          f"searched in its stead: {searched}", file=sys.stderr)
    for note in said["overridden"]:
        print(f"{said['file']}: {note}", file=sys.stderr)


def _write_json(plan, args, out, said: dict | None = None) -> None:
    """`mem4d plan --json`: _head's object with "configs" the shown rows, one line each, written as they are made (so
    --all over hundreds of thousands of rows never holds their JSON at once)."""
    rows = shown(plan, args)
    from_file = {reader: said for reader in READERS if getattr(args, reader)} if said else {}
    head = {**_head(plan, args), **from_file, "shown": len(rows), "configs": []}
    head = json.dumps(head, indent=1)
    before, _, after = head.rpartition("[]")
    out.write(before + "[")
    for n, i in enumerate(rows):
        out.write(("," if n else "") + "\n  " + json.dumps(plan.config(int(i))))
    out.write(("\n " if len(rows) else "") + "]" + after + "\n")


def _head(plan, args) -> dict:
    """The keys of `mem4d plan --json` but its rows: model, param_count, config (what every row shares), the search."""
    from ..plan.search import reference

    spent = plan.seconds["enumerate"] + plan.seconds["evaluate"]
    shape = plan.cluster.shape
    shared = {k: v for k, v in reference(plan.cluster, plan.profile).as_json(shape).items() if k not in SEARCHED}
    return {
        "model": shape.name, "param_count": shape.param_count, "config": shared, "profile": plan.profile,
        "gpus": plan.cluster.gpus, "gpus_per_node": args.gpus_per_node, "gpu_mem_bytes": args.gpu_mem,
        "threshold": args.threshold, "limit_bytes": int(plan.limit), "valid": plan.valid,
        "evaluated": plan.evaluated, "complete": plan.complete, "feasible": plan.feasible, "seconds": spent,
        "build_seconds": plan.seconds["build"],
        "top": None if args.all else args.top, "rank_by": args.rank_by,
        **({"system": args.system or "dgx-h100"} if args.rank_by == "time" else {}),
    }


def _write_csv(plan, path: str) -> None:
    keys = searched(plan.cluster.shape)
    choice = ("recompute_modules", "ac_every")  # what selective reruns: every row has them in the CSV
    columns = [*keys, *choice, *plan.components, "peak_bytes", "peak_from", "score"]
    with replaced(path, newline="") as handle:  # Ctrl-C leaves no partial file
        writer = csv.writer(handle)
        writer.writerow(columns)
        for i in plan.order:
            row = plan.config(i)
            cells = [layers_text(row["config"][c]) if c == "stage_layers" else row["config"][c] for c in keys]
            cells += [row["config"].get("recompute_modules", "core_attn"), row["config"].get("ac_every", "")]
            writer.writerow(cells + [row["bytes"].get(c, 0) for c in plan.components]
                            + [row["peak_bytes"], row["peak_from"], f"{row['score']:.6f}"])
    print(f"wrote {plan.feasible} configurations to {path}", file=sys.stderr)
