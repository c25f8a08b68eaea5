"""`--megatron FILE`: a run as Megatron-LM holds it, read into mem4d's ModelShape (where the arguments define the
model) and Training flags; every argument is modelled, harmless (megatron_args.tsv gives why) or refused, and every
argument mem4d does not model is named at once in one line (a ConfigError: exit 2), never ignored."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .argfile import read_args
from .megatron_model import model_fields
from .megatron_table import Arg, Args, convert, table
from .megatron_train import training_flags
from .problems import refuse


def collect(path: str | Path) -> Args:
    """The file's arguments converted as Megatron-LM's parser would; unknown flags, malformed values, a destination
    set twice and refused arguments (set away from Megatron-LM's default) become problems."""
    args = Args(Path(path))
    rows = table()
    for flag, raw in read_args(path):
        arg: Arg | None = rows.get(flag)
        if arg is None:
            args.problems.append(f"{flag} (not an argument of Megatron-LM @ d98e8a64)")
            continue
        try:
            value = convert(arg, flag, raw)
        except ValueError as err:
            args.problems.append(f"{err}")
            continue
        if value is None:
            continue
        if arg.dest in args.values:
            args.problems.append(f"{flag} (sets {arg.dest} again: {args.flags[arg.dest]} set it before)")
            continue
        args.values[arg.dest], args.flags[arg.dest] = value, flag
        if arg.cls == "refused" and value != arg.megatron_default():
            args.refuse(arg.dest, arg.reason)
    return args


def check(args: Args) -> None:
    """One line naming every problem of the file, or nothing."""
    refuse(args.path, args.problems, "argument")


@dataclass(frozen=True)
class Reading:
    """What a Megatron-LM argument file says: the model's fields (None where the file does not define the model), the
    vocabulary padding multiple, and the Training flags under mem4d's names."""

    model: dict | None
    pad_vocab: int
    training: dict


def read(path: str | Path, vocab_size: int | None = None, model_given: bool = False) -> Reading:
    """Read a Megatron-LM argument file (ConfigError in one line naming every unmodelled argument); `vocab_size`:
    the command line's, where the file's tokenizer holds it; `model_given`: --model gives the model (the file's
    vocabulary then unneeded)."""
    args = collect(path)
    training = training_flags(args)
    model = model_fields(args, training, vocab_size, model_given)
    check(args)
    return Reading(model, args.get("make_vocab_size_divisible_by"), training)
