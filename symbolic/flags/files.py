"""--megatron FILE, --gpus N and --rank: a run as its trainer holds it (symbolic.readers), the world size d comes from,
and the rank whose stage the verdict names. Flags given on the command line beside a file override it, said so."""
from __future__ import annotations

import argparse
import dataclasses

from ..config.errors import ConfigError
from ..config.shapes import ModelShape
from .values import positive_int

GIVEN = "_given"  # the namespace attribute listing the destinations the command line set


def _recording(action: argparse.Action) -> None:
    """Make `action` note its destination in the namespace when the command line uses it (defaults do not)."""
    base = type(action)

    class Recording(base):
        def __call__(self, parser, namespace, values, option_string=None):
            if getattr(namespace, GIVEN, None) is None:
                setattr(namespace, GIVEN, set())  # one set per parse: a default would be shared
            getattr(namespace, GIVEN).add(self.dest)
            super().__call__(parser, namespace, values, option_string)

    action.__class__ = Recording


def add_file_args(parser: argparse.ArgumentParser) -> None:
    """--megatron, --gpus and --rank; every option then records whether the command line gave it."""
    g = parser.add_argument_group("a run as its trainer holds it")
    g.add_argument("--megatron", default=None, metavar="FILE",
                   help="Megatron-LM's arguments: a YAML mapping of --flag: value (a functional test's "
                        "model_config.yaml, its MODEL_ARGS) or a text file of --flag value arguments; the model from "
                        "them where they define it (else --model), the training from the rest; flags given here "
                        "override the file")
    g.add_argument("--vocab-size", type=positive_int, default=None, metavar="V",
                   help="with --megatron: the vocabulary's size where the file's tokenizer holds it in its own files "
                        "(SentencePiece, Hugging Face); the file's --vocab-size wins")
    g.add_argument("--gpus", type=positive_int, default=None, metavar="N",
                   help="the world size: d = N / (tp x pp x cp) (refused where it does not divide; give it or --dp)")
    g.add_argument("--rank", default=None, metavar="first|last|N",
                   help="the global rank whose pipeline stage the verdict names (Megatron-LM's order tp-cp-ep-dp-pp: "
                        "rank N is on pipeline stage N // (world / pp)); last: world - 1, the rank Megatron-LM logs "
                        "memory from (default: the most loaded stage)")
    parser.set_defaults(**{GIVEN: None})
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            _recording(action)


def given(args: argparse.Namespace) -> set:
    return getattr(args, GIVEN, None) or set()


def apply_files(args: argparse.Namespace) -> tuple[ModelShape | None, list[str]]:
    """Fill `args` from --megatron (the command line's own flags kept) and --gpus; the model the file defines (None:
    --model gives it) and the notes of what the command line overrode."""
    notes: list[str] = []
    shape = _megatron(args, notes) if args.megatron else None
    if args.gpus is not None:
        if "dp" in given(args):
            raise ConfigError(f"--gpus {args.gpus} and --dp {args.dp} both set the data-parallel size: give one")
        ranks = args.tp * args.pp * args.cp
        if args.gpus % ranks:
            raise ConfigError(f"--gpus {args.gpus} is not a multiple of tp x pp x cp = {args.tp} x {args.pp} x "
                              f"{args.cp} = {ranks}: no data-parallel size fits")
        args.dp = args.gpus // ranks
    elif args.megatron and "dp" not in given(args):
        raise ConfigError(f"--megatron {args.megatron}: Megatron-LM takes the world size from its launcher; give "
                          "--gpus N (or --dp)")
    return shape, notes


def _megatron(args: argparse.Namespace, notes: list[str]) -> ModelShape | None:
    from ..readers.megatron import read

    if getattr(args, "recipe", None) not in (None, "megatron") or getattr(args, "profile", None) not in (None, "paper"):
        raise ConfigError(f"--megatron reads a Megatron-LM run: --recipe/--profile "
                          f"{args.recipe or args.profile} conflicts with it")
    own = given(args)
    reading = read(args.megatron, vocab_size=args.vocab_size, model_given="model" in own)
    if args.vocab_size is not None:
        notes.append(f"--vocab-size {args.vocab_size} from the command line (used where the file's tokenizer holds "
                     "the size)")
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
