"""--megatron FILE, --gpus N and --rank: a run as its trainer holds it (symbolic.readers), the world size d comes from,
and the rank whose stage the verdict names. Flags given on the command line beside a file override it, said so."""
from __future__ import annotations

import argparse
import copy
import dataclasses

from ..config.errors import ConfigError
from ..config.shapes import ModelShape
from .values import positive_int


def given(parser: argparse.ArgumentParser, argv: list[str]) -> frozenset[str]:
    """The destinations `argv` itself sets (a default does not): argv parsed again by a copy of `parser` whose
    defaults are all suppressed, so only the given keys are present."""
    quiet = copy.deepcopy(parser)
    for action in quiet._actions:  # argparse keeps no public handle on an added option's default
        action.default = argparse.SUPPRESS
    return frozenset(vars(quiet.parse_args(argv)))


def add_file_args(parser: argparse.ArgumentParser) -> None:
    """--megatron, --gpus and --rank."""
    g = parser.add_argument_group("a run as its trainer holds it")
    g.add_argument("--megatron", default=None, metavar="FILE",
                   help="Megatron-LM's arguments: a YAML mapping of --flag: value (a functional test's "
                        "model_config.yaml, its MODEL_ARGS) or a text file of --flag value arguments; the model from "
                        "them where they define it (else --model), the training from the rest; flags given here "
                        "override the file")
    g.add_argument("--gpus", type=positive_int, default=None, metavar="N",
                   help="the world size: d = N / (tp x pp x cp) (refused where it does not divide; give it or --dp)")
    g.add_argument("--rank", default=None, metavar="first|last|N",
                   help="the global rank whose pipeline stage the verdict names (Megatron-LM's order tp-cp-ep-dp-pp: "
                        "rank N is on pipeline stage N // (world / pp)); last: world - 1, the rank Megatron-LM logs "
                        "memory from (default: the most loaded stage)")


def apply_files(args: argparse.Namespace) -> tuple[ModelShape | None, list[str]]:
    """Fill `args` from --megatron (the command line's own flags kept) and --gpus; the model the file defines (None:
    --model gives it) and the notes of what the command line overrode."""
    notes: list[str] = []
    shape = _megatron(args, notes) if args.megatron else None
    if args.gpus is not None:
        if "dp" in args.given:
            raise ConfigError(f"--gpus {args.gpus} and --dp {args.dp} both set the data-parallel size: give one")
        ranks = args.tp * args.pp * args.cp
        if args.gpus % ranks:
            raise ConfigError(f"--gpus {args.gpus} is not a multiple of tp x pp x cp = {args.tp} x {args.pp} x "
                              f"{args.cp} = {ranks}: no data-parallel size fits")
        args.dp = args.gpus // ranks
    elif args.megatron and "dp" not in args.given:
        raise ConfigError(f"--megatron {args.megatron}: Megatron-LM takes the world size from its launcher; give "
                          "--gpus N (or --dp)")
    return shape, notes


def _megatron(args: argparse.Namespace, notes: list[str]) -> ModelShape | None:
    from ..readers.megatron import read

    if getattr(args, "recipe", None) not in (None, "megatron") or getattr(args, "profile", None) not in (None, "paper"):
        raise ConfigError(f"--megatron reads a Megatron-LM run: --recipe/--profile "
                          f"{args.recipe or args.profile} conflicts with it")
    reading = read(args.megatron)
    own = args.given
    for key, value in reading.training.items():
        if key in own:
            notes.append(f"--{key.replace('_', '-')} {_shown(getattr(args, key))} from the command line "
                         f"(the file: {_shown(value)})")
        else:
            setattr(args, key, value)
    if reading.model is None:
        if "model" not in own:
            raise ConfigError(f"--megatron {args.megatron}: the arguments define no model (no --num-layers, "
                              "--hidden-size, --num-attention-heads): give --model config.json")
        return None
    if "model" in own:
        notes.append(f"--model {args.model} from the command line (the file defines {reading.model['name']})")
        return None
    try:
        shape = ModelShape(**reading.model)
    except ConfigError as err:
        raise ConfigError(f"--megatron {args.megatron}: {err}") from None
    multiple = args.pad_vocab if "pad_vocab" in own else reading.pad_vocab
    unit = multiple * args.tp
    return dataclasses.replace(shape, v=-(-shape.v // unit) * unit)


def _shown(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


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
