"""--megatron, --torchtitan (--override), --deepspeed, --gpus N and --rank: a run as its trainer holds it
(symbolic.readers), the world size d comes from, and the rank whose stage the verdict names. Flags given on the
command line beside a file override it, said so."""

from __future__ import annotations

import argparse
import copy

from ..config.errors import ConfigError
from ..config.shapes import ModelShape
from .trainer_files import accumulate, deepspeed_file, fill, megatron_shape, read_megatron, titan_batch, torchtitan_file
from .values import positive_int


def given(parser: argparse.ArgumentParser, argv: list[str]) -> frozenset[str]:
    """The destinations `argv` itself sets (a default does not): argv parsed again by a copy of `parser` whose
    defaults are all suppressed, so only the given keys are present."""
    quiet = copy.deepcopy(parser)
    for action in quiet._actions:  # argparse keeps no public handle on an added option's default
        action.default = argparse.SUPPRESS
    return frozenset(vars(quiet.parse_args(argv)))


def add_megatron_arg(group) -> None:
    """--megatron FILE (estimate, plan, report)."""
    group.add_argument(
        "--megatron",
        default=None,
        metavar="FILE",
        help="Megatron-LM's arguments: a YAML mapping of --flag: value (a functional test's "
        "model_config.yaml, its MODEL_ARGS) or a text file of --flag value arguments; the model "
        "from them where they define it (else --model), the training from the rest; flags given "
        "here override the file",
    )


def add_trainer_args(group) -> None:
    """--torchtitan JOB.toml with --override, and --deepspeed DS_CONFIG.json (estimate, plan, report)."""
    group.add_argument(
        "--torchtitan",
        default=None,
        metavar="JOB.toml",
        help="torchtitan 0.2.2's job config (--job.config_file): a llama3 flavour (else --model), the "
        "parallelism degrees, batch, sequence, activation checkpointing, compile and Float8, under "
        "--recipe torchtitan; flags given here override the file",
    )
    group.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="with --torchtitan: a job config key over the file's, as torchtitan's --section.key "
        "(repeatable; the value as TOML reads it, e.g. training.seq_len=4096)",
    )
    group.add_argument(
        "--torchtitan-version",
        default=None,
        metavar="VERSION",
        help="with --torchtitan: the torchtitan the run used (9dec370, the default; 0.1.0, 0.2.2, "
        "0.3.0: each block read; others refused)",
    )
    group.add_argument(
        "--deepspeed",
        default=None,
        metavar="DS_CONFIG.json",
        help="DeepSpeed 0.19.8's config: ZeRO stage and options, bf16, offload, batch, optimizer, "
        "under --recipe deepspeed, with --model config.json (the config names no model); flags "
        "given here override the file",
    )


def add_file_args(parser: argparse.ArgumentParser) -> None:
    """--megatron, --gpus and --rank."""
    g = parser.add_argument_group("a run as its trainer holds it")
    add_megatron_arg(g)
    g.add_argument(
        "--vocab-size",
        type=positive_int,
        default=None,
        metavar="V",
        help="with --megatron: the vocabulary's size where the file's tokenizer holds it in its own files "
        "(SentencePiece, Hugging Face); the file's --vocab-size wins",
    )
    add_trainer_args(g)
    g.add_argument(
        "--gpus",
        type=positive_int,
        default=None,
        metavar="N",
        help="the world size: d = N / (tp x pp x cp) (refused where it does not divide; give it or --dp)",
    )
    g.add_argument(
        "--rank",
        default=None,
        metavar="first|last|N",
        help="the global rank whose pipeline stage the verdict names (Megatron-LM's order tp-cp-ep-dp-pp: "
        "rank N is on pipeline stage N // (world / pp)); last: world - 1, the rank Megatron-LM logs "
        "memory from (default: the most loaded stage)",
    )


def apply_files(args: argparse.Namespace) -> tuple[ModelShape | None, list[str]]:
    """Fill `args` from --megatron, --torchtitan or --deepspeed (the command line's own flags kept) and --gpus; the
    model the file defines or --model names (a Megatron-LM vocabulary padded as it pads it; None without a file), and
    the notes of what the command line or --override overrode."""
    notes: list[str] = []
    shape, titan = None, getattr(args, "torchtitan", None)  # report takes --megatron alone
    deepspeed = getattr(args, "deepspeed", None)
    if sum(map(bool, (args.megatron, titan, deepspeed))) > 1:
        raise ConfigError("--megatron, --torchtitan and --deepspeed each state a whole run: give one")
    accumulation = deepspeed_file(args, notes) if deepspeed else None
    if args.megatron:
        reading = read_megatron(args, notes)
        fill(args, reading.training, notes)
        shape = megatron_shape(args, reading, notes, args.tp)
    titan_dp: dict = {}
    if titan:
        shape, titan_dp = torchtitan_file(args, notes)
    elif getattr(args, "override", None):
        raise ConfigError("--override sets a key of a --torchtitan job file: give the file")
    elif getattr(args, "torchtitan_version", None):
        raise ConfigError("--torchtitan-version names the torchtitan a --torchtitan job file ran on: give the file")
    if args.gpus is not None:
        if "dp" in args.given:
            raise ConfigError(f"--gpus {args.gpus} and --dp {args.dp} both set the data-parallel size: give one")
        ranks = args.tp * args.pp * args.cp
        if args.gpus % ranks:
            raise ConfigError(
                f"--gpus {args.gpus} is not a multiple of tp x pp x cp = {args.tp} x {args.pp} x "
                f"{args.cp} = {ranks}: no data-parallel size fits"
            )
        args.dp = args.gpus // ranks
    elif args.megatron and "dp" not in args.given:
        raise ConfigError(
            f"--megatron {args.megatron}: Megatron-LM takes the world size from its launcher; give --gpus N (or --dp)"
        )
    elif titan and "dp" not in args.given and "dp" not in titan_dp:
        raise ConfigError(
            f"--torchtitan {args.torchtitan}: data_parallel_shard_degree -1 takes the ranks left of "
            "the world size; give --gpus N (or --dp)"
        )
    elif deepspeed and "dp" not in args.given:
        raise ConfigError(
            f"--deepspeed {deepspeed}: DeepSpeed takes the world size from its launcher; give --gpus N (or --dp)"
        )
    if accumulation is not None:
        accumulate(args, accumulation)
    if titan:
        titan_batch(args, titan_dp["local_batch"])
    if args.megatron and args.gbs is None:
        args.gbs = args.mbs * args.dp  # Megatron-LM's default --global-batch-size: one micro batch per step
    return shape, notes


def pipeline_rank(spec: str | None, world: int, p: int) -> tuple[int | None, int | None]:
    """--rank as (global rank, pipeline rank): first 0, last world - 1, N in [0, world); (None, None) unset."""
    if spec is None:
        return None, None
    rank = {"first": 0, "last": world - 1}.get(spec)
    if rank is None:
        try:
            rank = int(spec)
        except ValueError:
            raise ConfigError(f"--rank must be first, last or a rank from 0 to {world - 1}, got {spec!r}") from None
    if not 0 <= rank < world:
        raise ConfigError(f"--rank {spec}: the job has ranks 0 to {world - 1} (world size {world})")
    return rank, rank // (world // p)
