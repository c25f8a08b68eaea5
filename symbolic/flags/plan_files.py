"""`plan --megatron|--torchtitan|--deepspeed FILE`: the model and what every row shares from a trainer's file, the rest
searched as without one; which settings came from the file, said for the output. A setting no row can hold away from
its default is refused in one line (`mem4d estimate` answers for the file's own configuration)."""

from __future__ import annotations

import argparse

from ..config.errors import ConfigError
from ..config.precision import FIELDS
from ..config.shapes import ModelShape
from ..config.training import Training
from .trainer_files import RUNS, fill, megatron_shape, read_deepspeed, read_megatron, read_torchtitan, shown
from .training import model_from_args

READERS = tuple(RUNS)  # the trainers whose file plan reads
HELD_RECIPE = (
    "swiglu_fusion",
    "srelu_fusion",
    "moe_grouped_gemm",
    "moe_dispatcher",
    "transformer_impl",
    "cuda_graph",
    "cuda_graph_scope",
    "tp_comm_overlap",
    "account_embedding",
    "account_loss",
)  # Cluster.held: Megatron-LM's, every row
HOLDS = (
    "seq",
    "gbs",
    "sp",
    "flash_attn",
    "moe_capacity",
    "fp8",
    "fp8_param_gather",
    "fp8_all_gather",
    "compile",
    *HELD_RECIPE,
    *FIELDS,
)  # what every row holds as the file states it
SEARCHES = (
    "dp",
    "tp",
    "pp",
    "cp",
    "ep",
    "etp",
    "vpp",
    "mbs",
    "recompute",
    "recompute_modules",
    "ac_every",
    "zero",
    "stage_layers",
)  # what plan searches in the file's stead
BATCH = ("local_batch", "accumulation")  # the global batch through d, which plan searches: --gbs then
WHERE = {
    "megatron": {"seq": "--seq-length", "gbs": "--global-batch-size"},
    "torchtitan": {"seq": "training.seq_len", "gbs": "training.global_batch_size"},
    "deepspeed": {"seq": "sequence length (a DeepSpeed config has none)", "gbs": "train_batch_size"},
}


def _reading(args: argparse.Namespace, reader: str, notes: list[str]) -> tuple[dict, ModelShape, bool]:
    """The file's Training flags, the model (the file's, or --model's), whether the file gave it."""
    if reader == "megatron":
        reading = read_megatron(args)
        given = reading.model is not None and "model" not in args.given
        return reading.training, megatron_shape(args, reading, notes, 1), given
    if reader == "deepspeed":
        return read_deepspeed(args), model_from_args(args), False
    reading = read_torchtitan(args, notes)
    if "model" in args.given or reading.model is None:
        if "model" not in args.given:
            raise ConfigError(
                f"--torchtitan {args.torchtitan}: model {reading.named} is no llama3 flavour mem4d "
                "reads: give --model config.json"
            )
        return reading.training, model_from_args(args), False
    return reading.training, reading.model, True


def plan_file(args: argparse.Namespace) -> tuple[ModelShape, dict]:
    """Fill `args` with the file's model and the settings every row shares (the command line's own kept); the model
    and what came from the file."""
    readers = [name for name in READERS if getattr(args, name)]
    if len(readers) > 1:
        raise ConfigError("--megatron, --torchtitan and --deepspeed each state a whole run: give one")
    reader, notes = readers[0], []
    path = getattr(args, reader)
    training, shape, from_file = _reading(args, reader, notes)
    args.recipe = training.pop("recipe", args.recipe)
    held = {key: value for key, value in training.items() if key in HOLDS}
    fill(args, held, notes)
    unheld = [
        f"{key}={shown(value)}"
        for key, value in training.items()
        if key not in (*HOLDS, *SEARCHES, *BATCH) and value != getattr(Training, key)
    ]
    if unheld:
        raise ConfigError(
            f"--{reader} {path}: plan's rows cannot hold {', '.join(unheld)} (mem4d estimate --{reader} "
            "answers for the file's own configuration)"
        )
    for key in ("seq", "gbs"):
        if getattr(args, key) is None:
            raise ConfigError(f"--{reader} {path} gives no {WHERE[reader][key]}: give --{key}")
    return shape, {
        "file": path,
        "model": from_file,
        "held": {key: shown(getattr(args, key)) for key in held if key not in args.given},
        "searched": {
            key: shown(training[key])
            for key in SEARCHES
            if training.get(key) is not None
            and (shape.moe or key not in ("ep", "etp"))
            and not (key in ("ep", "etp") and getattr(args, key) is not None)
        },  # plan --ep
        "overridden": notes,
    }
