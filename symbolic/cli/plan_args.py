"""`mem4d plan`'s arguments by group: the cluster and the job, what the search covers, what every row shares, the
output and ranking, and a trainer's file."""

from __future__ import annotations

import argparse

from ..config import precision
from ..config.parallel import ZERO_STAGES
from ..flags.files import add_megatron_arg, add_trainer_args
from ..flags.precision import add_precision_args
from ..flags.switches import add_zero_aliases
from ..flags.training import add_dispatcher_arg, add_model_args, add_recipe_arg, add_vision_args
from ..flags.values import capacity, positive_int
from .args import add_fit_args

TOP = 10  # rows plan shows by default


def add_job_args(parser: argparse.ArgumentParser) -> None:
    """The model, the cluster (--gpus, --gpus-per-node), the fit rule, the job (--seq, --gbs) and the recipe."""
    add_model_args(parser)
    parser.add_argument("--gpus", type=positive_int, required=True, metavar="N", help="GPUs in the job, d*t*p*c")
    parser.add_argument(
        "--gpus-per-node",
        type=positive_int,
        default=8,
        metavar="G",
        help="GPUs per node; groups wider than a node pay inter-node bandwidth",
    )
    add_fit_args(parser)
    parser.add_argument("--seq", type=positive_int, metavar="S", help="sequence length s (required, or --megatron's)")
    parser.add_argument(
        "--gbs", type=positive_int, metavar="G", help="global batch in sequences (required, or --megatron's)"
    )
    add_recipe_arg(parser)


def add_search_args(parser: argparse.ArgumentParser) -> None:
    """What the search covers and shows: --top/--all, sp, ZeRO stages, flash attention, capacity, ep and etp."""
    parser.add_argument(
        "--top", type=positive_int, default=None, metavar="K", help=f"rows in the table and in --json (default: {TOP})"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every feasible row, in the table or --json (streamed there one row at a time)",
    )
    parser.add_argument("--no-sp", dest="sp", action="store_false", help="disable sequence parallelism")
    parser.add_argument(
        "--zero",
        type=int,
        choices=ZERO_STAGES,
        default=None,
        help="search only this ZeRO stage, 0 to 3 (default: every stage)",
    )
    add_zero_aliases(parser)
    parser.add_argument(
        "--no-flash-attn",
        dest="flash_attn",
        action="store_false",
        help="keep s x s attention scores and softmax for backward",
    )
    parser.add_argument(
        "--moe-capacity",
        type=capacity,
        default=1.0,
        metavar="C_f",
        help="a model with experts: tokens an expert receives over an even share (capacity factor, "
        "or a dropless run's imbalance); plan searches ep in divisors(E) and etp in {1, tp}",
    )
    parser.add_argument(
        "--ep",
        type=positive_int,
        default=None,
        metavar="E",
        help="search only this expert parallel size e (default: every divisor of the routed experts)",
    )
    parser.add_argument(
        "--etp",
        type=positive_int,
        default=None,
        metavar="T",
        help="search only this expert tensor parallel size t_e (default: 1 and tp)",
    )


def add_row_args(parser: argparse.ArgumentParser) -> None:
    """What every row shares: FP8, torch.compile, the vision tower, Megatron-Core's token dispatcher and accounted
    pipeline units."""
    parser.add_argument(
        "--fp8",
        default="none",
        choices=tuple(precision.FP8_RECIPES),
        help="FP8 in every row: --recipe megatron, Transformer Engine's (Megatron-LM --fp8-recipe "
        "delayed|tensorwise|blockwise|mxfp8, or nvfp4); --recipe torchtitan, torchao's Float8 "
        "(tensorwise|rowwise) (default none)",
    )
    parser.add_argument(
        "--fp8-param-gather",
        action="store_true",
        help="--recipe megatron with --fp8 delayed, tensorwise or mxfp8: FP8 weights in every row",
    )
    parser.add_argument(
        "--fp8-all-gather",
        action="store_true",
        help="--recipe torchtitan with --fp8 tensorwise: FSDP2 gathers FP8 weights in every row",
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="--recipe torchtitan: every row's blocks under torch.compile (torchtitan's --compile.enable)",
    )
    add_vision_args(parser)
    add_dispatcher_arg(parser)
    parser.add_argument(
        "--account-for-embedding",
        dest="account_embedding",
        action="store_true",
        help="--recipe megatron: every row counts the embedding as a pipeline unit (Megatron-Core's "
        "--account-for-embedding-in-pipeline-split; L + 1 units over pp x vpp, even stages)",
    )
    parser.add_argument(
        "--account-for-loss",
        dest="account_loss",
        action="store_true",
        help="--recipe megatron: every row counts the loss as a pipeline unit",
    )


def add_output_args(parser: argparse.ArgumentParser) -> None:
    """--json/--csv, --plot, --explain, the ranking (--rank-by, --system), precision and a trainer's file."""
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the --top (or --all) configurations as JSON")
    out.add_argument("--csv", metavar="FILE", help="also write every feasible configuration to a CSV file")
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="draw peak memory over (tp, pp) for the best cp (png, pdf, svg or another format matplotlib writes)",
    )
    parser.add_argument("--explain", action="store_true", help="print the ranking proxy's formulas and terms")
    parser.add_argument(
        "--rank-by",
        choices=("time", "proxy"),
        default=None,
        help="time: the step-time model's predicted tokens/s/GPU on --system (default with --recipe "
        "megatron); proxy: the alpha-beta proxy (the default for the other recipes)",
    )
    parser.add_argument(
        "--system",
        default=None,
        metavar="NAME",
        help="the system --rank-by time predicts for (dgx-a100, dgx-h100, ..., gb300-nvl72, or a "
        ".toml file; default dgx-h100)",
    )
    add_precision_args(parser)
    g = parser.add_argument_group(
        "a run as its trainer holds it: the model and what every row shares (sequence, "
        "global batch, precision, FP8, compile, sp, flash attention, capacity) from the "
        "file; its parallel sizes, micro batch, recompute and ZeRO searched"
    )
    add_megatron_arg(g)
    add_trainer_args(g)
