"""Each trainer's file read into the command's arguments (symbolic.readers): --megatron's Reading and model, the
--torchtitan job file, the --deepspeed config, and the global batch they make; the command line's own flags kept,
said so (fill)."""

from __future__ import annotations

import argparse
import dataclasses

from ..config.errors import ConfigError
from ..config.shapes import ModelShape
from .training import model_from_args


def fill(args: argparse.Namespace, values: dict, notes: list[str]) -> None:
    """Set each flag the command line did not give to the file's value; note those it gave."""
    for key, value in values.items():
        if key in args.given:
            notes.append(
                f"--{key.replace('_', '-')} {shown(getattr(args, key))} from the command line "
                f"(the file: {shown(value)})"
            )
        else:
            setattr(args, key, value)


def shown(value) -> str:
    """A flag's value as the command line writes it (a list comma-separated)."""
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


# each file's trainer as a message names it, and its profile (its recipe is the file's flag: megatron, ...)
RUNS = {
    "megatron": ("Megatron-LM", "paper"),
    "torchtitan": ("torchtitan", "torchtitan"),
    "deepspeed": ("DeepSpeed", "deepspeed"),
}


def own_run(args: argparse.Namespace, reader: str) -> None:
    """Refuse, in one line, a --recipe or --profile other than the trainer's whose file --`reader` reads."""
    run, profile = RUNS[reader]
    if getattr(args, "recipe", None) not in (None, reader) or getattr(args, "profile", None) not in (None, profile):
        raise ConfigError(
            f"--{reader} reads a {run} run: --recipe/--profile {args.recipe or args.profile} conflicts with it"
        )


def read_megatron(args: argparse.Namespace, notes: list[str] | None = None):
    """The --megatron file's Reading; a recipe or profile other than Megatron-LM's refused."""
    from ..readers.megatron import read

    own_run(args, "megatron")
    vocab = getattr(args, "vocab_size", None)
    reading = read(args.megatron, vocab_size=vocab, model_given="model" in args.given)
    if vocab is not None and notes is not None:
        notes.append(f"--vocab-size {vocab} from the command line (used where the file's tokenizer holds the size)")
    return reading


def given_model(args: argparse.Namespace, reader: str, notes: list[str], named: str | None, missing: str):
    """--model's ModelShape where the command line gives it (noted where the --`reader` file defines one too,
    `named`), else None: the file's; where the file defines none either (`named` None), `missing` refused in one
    line."""
    if "model" in args.given:
        if named is not None:
            notes.append(f"--model {args.model} from the command line (the file: {named})")
        return model_from_args(args)
    if named is None:
        raise ConfigError(f"--{reader} {getattr(args, reader)}: {missing}: give --model config.json")
    return None


def megatron_shape(args: argparse.Namespace, reading, notes: list[str], t: int) -> ModelShape:
    """The model the file defines (or --model's, said so), its vocabulary padded to a multiple of the file's
    --make-vocab-size-divisible-by (or --pad-vocab) x t, as Megatron-LM's _vocab_size_with_padding pads it."""
    own = args.given
    named = None if reading.model is None else reading.model["name"]
    shape = given_model(
        args,
        "megatron",
        notes,
        named,
        "the arguments define no model (no --num-layers, --hidden-size, --num-attention-heads)",
    )
    if shape is None:
        try:
            shape = ModelShape(**reading.model)
        except ConfigError as err:
            raise ConfigError(f"--megatron {args.megatron}: {err}") from None
    multiple = args.pad_vocab if "pad_vocab" in own else reading.pad_vocab
    unit = multiple * t
    return dataclasses.replace(shape, v=-(-shape.v // unit) * unit)


def read_deepspeed(args: argparse.Namespace) -> dict:
    """The --deepspeed config's values; no --model (a config names none), or another recipe or profile, refused."""
    from ..readers.deepspeed import read

    if "model" not in args.given:
        raise ConfigError(f"--deepspeed {args.deepspeed}: a DeepSpeed config names no model: give --model config.json")
    own_run(args, "deepspeed")
    return read(args.deepspeed)


def read_torchtitan(args: argparse.Namespace, notes: list[str]):
    """The --torchtitan job file's Reading (its version's and --override's notes added to `notes`); a recipe or
    profile other than torchtitan's refused."""
    from ..readers.torchtitan import read
    from ..readers.torchtitan_versions import version_notes

    own_run(args, "torchtitan")
    notes += version_notes(getattr(args, "torchtitan_version", None))
    reading = read(args.torchtitan, args.override)
    notes += reading.overridden
    return reading


def deepspeed_file(args: argparse.Namespace, notes: list[str]) -> int | None:
    """--deepspeed: `args` filled from the config (the command line's own kept); its gradient_accumulation_steps."""
    training = read_deepspeed(args)
    args.recipe = training.pop("recipe")
    accumulation = training.pop("accumulation", None)
    fill(args, training, notes)
    return accumulation


def accumulate(args: argparse.Namespace, steps: int) -> None:
    """DeepSpeed's train_batch_size = micro batch x gradient_accumulation_steps x data-parallel size: the global batch
    where the config leaves it out, else checked (DeepSpeed's engine asserts it)."""
    gbs = args.mbs * steps * args.dp
    if args.gbs is None:
        args.gbs = gbs
    elif args.gbs != gbs:
        raise ConfigError(
            f"--deepspeed {args.deepspeed}: train_batch_size {args.gbs} is not micro batch {args.mbs} x "
            f"gradient_accumulation_steps {steps} x data-parallel size {args.dp} = {gbs}"
        )


def torchtitan_file(args: argparse.Namespace, notes: list[str]) -> tuple[ModelShape, dict]:
    """--torchtitan: `args` filled from the job file (the command line's own kept), its pipeline split placed on the
    model's layers; the model, and {"dp": d} where the file fixes the data-parallel size (checked against --gpus)."""
    from ..readers.torchtitan import FLAVORS, stage_split

    reading = read_torchtitan(args, notes)
    args.recipe = reading.training.pop("recipe")
    fixed = {key: reading.training.pop(key) for key in ("dp", "local_batch") if key in reading.training}
    fill(args, reading.training, notes)
    if "dp" in fixed and "dp" not in args.given:
        if args.gpus is not None and fixed["dp"] * args.tp * args.pp * args.cp != args.gpus:
            raise ConfigError(
                f"--torchtitan {args.torchtitan}: data_parallel_shard_degree {fixed['dp']} x tp x pp x "
                f"cp = {fixed['dp'] * args.tp * args.pp * args.cp} is not --gpus {args.gpus}"
            )
        args.dp = fixed["dp"]
    named = None if reading.model is None else reading.model.name
    missing = f"model {reading.named} (mem4d reads the llama3 flavours {', '.join(FLAVORS)})"
    shape = given_model(args, "torchtitan", notes, named, missing) or reading.model
    if args.pp > 1 and "stage_layers" not in args.given:
        split = stage_split(shape.L, args.pp, *reading.split)
        args.stage_layers = None if len(set(split)) == 1 else split
    return shape, fixed


def titan_batch(args: argparse.Namespace, local: int) -> None:
    """torchtitan's global batch: local_batch_size x d where the file leaves it at -1, else a multiple of that
    (train.py's gradient accumulation steps)."""
    if args.gbs is None:
        args.gbs = local * args.dp
    elif args.gbs % (local * args.dp):
        raise ConfigError(
            f"--torchtitan {args.torchtitan}: global batch {args.gbs} is not a multiple of "
            f"local_batch_size {local} x data-parallel size {args.dp}"
        )
