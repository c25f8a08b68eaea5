"""`--torchtitan JOB.toml [--override section.key=value ...]`: a run as torchtitan 0.2.2 holds it, read into mem4d's
ModelShape (a llama3 flavour) and Training flags under --recipe torchtitan; every key is modelled, harmless
(torchtitan_keys.tsv gives why) or refused, and every key mem4d does not model is named at once in one line."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.errors import ConfigError
from ..config.shapes import ModelShape
from .torchtitan_table import VERSION, Job, load
from .problems import refuse

# torchtitan/models/llama3/__init__.py llama3_args: (dim, n_layers, n_heads, n_kv_heads, ffn_dim_multiplier,
# multiple_of); vocab_size 128256 (model/args.py) but the debug model's 2048
FLAVORS = {
    "debugmodel": (256, 6, 16, None, None, 256, 2048),
    "8B": (4096, 32, 32, 8, 1.3, 1024, 128256),
    "70B": (8192, 80, 64, 8, 1.3, 4096, 128256),
    "405B": (16384, 126, 128, 8, 1.2, 4096, 128256),
}
AC = {"selective": "selective", "full": "full", "none": "none"}  # activation_checkpoint.mode; memory_budget refused


def flavor_shape(flavor: str) -> ModelShape:
    """A llama3 flavour's shape: FeedForward's hidden size int(2 * 4 dim / 3), times ffn_dim_multiplier, rounded up
    to multiple_of (torchtitan/models/llama3/model/model.py)."""
    dim, layers, heads, kv, multiplier, multiple, vocab = FLAVORS[flavor]
    hidden = int(2 * 4 * dim / 3)
    hidden = int(multiplier * hidden) if multiplier else hidden
    f = multiple * ((hidden + multiple - 1) // multiple)
    return ModelShape(f"llama3-{flavor.lower()}", h=dim, f=f, a=heads, k=kv or heads, L=layers, v=vocab)


def stage_split(L: int, p: int, first_less: int, last_less: int) -> tuple[int, ...]:
    """Layers of each pipeline stage as generate_llm_fqn_per_model_part places them (torchtitan/distributed/
    pipeline_parallel.py): L + the embedding's and the output's weights split evenly, the extra units to the first
    stages, the first (last) stage's weight taken from its layers."""
    units = L + first_less + last_less
    per, extra = divmod(units, p)
    if per == 0 or first_less > per or last_less > per:
        raise ConfigError(
            f"{L} layers and the embedding/output weights {first_less}/{last_less} over {p} stages: "
            "torchtitan raises (an empty stage or a weight above a stage's share)"
        )
    out, left = [], L
    for stage in range(p):
        share = per + (stage < extra) - (first_less if stage == 0 else last_less if stage == p - 1 else 0)
        out.append(min(share, left))
        left -= out[-1]
    return tuple(out)


@dataclass(frozen=True)
class Reading:
    """What a job file says: the flavour's shape (None: --model gives it) and the model it names, the Training flags
    under mem4d's names (recipe torchtitan), the pipeline weights of its split, and what --override changed."""

    model: ModelShape | None
    named: str
    training: dict
    split: tuple[int, int]
    overridden: list[str]


def _parallel(job: Job) -> dict:
    replicate, shard = (
        job.get("parallelism.data_parallel_replicate_degree"),
        job.get("parallelism.data_parallel_shard_degree"),
    )
    if replicate != 1:
        job.refuse("parallelism.data_parallel_replicate_degree", "HSDP or DDP: mem4d shards FSDP2 over every data rank")
    out = {
        "tp": job.get("parallelism.tensor_parallel_degree"),
        "pp": job.get("parallelism.pipeline_parallel_degree"),
        "cp": job.get("parallelism.context_parallel_degree"),
        "ep": job.get("parallelism.expert_parallel_degree"),
        "seq": job.get("training.seq_len"),
        "sp": True,
    }  # torchtitan's TP plans always shard the sequence
    if job.get("parallelism.expert_tensor_parallel_degree") != 1:
        out["etp"] = job.get("parallelism.expert_tensor_parallel_degree")
    for key in ("tp", "pp", "cp", "ep", "seq"):
        if out[key] < 1:
            job.problems.append(f"{key} = {out[key]} (must be a positive integer)")
    if shard > 0:
        out["dp"] = shard
    elif shard != -1:
        job.refuse("parallelism.data_parallel_shard_degree", "must be -1 (the ranks left) or a positive integer")
    local, pp_micro = job.get("training.local_batch_size"), job.get("parallelism.pipeline_parallel_microbatch_size")
    out["mbs"] = pp_micro if out["pp"] > 1 else local  # without a pipeline the local batch runs at once
    if out["pp"] > 1 and local % pp_micro:
        job.refuse(
            "parallelism.pipeline_parallel_microbatch_size", f"does not divide training.local_batch_size {local}"
        )
    gbs = job.get("training.global_batch_size")
    if gbs > 0:
        out["gbs"] = gbs
    return out, local


def _step(job: Job) -> dict:
    """Recompute, sharding, compile, Float8, optimizer and precision."""
    out = {"zero": {"default": 3, "never": 2}.get(job.get("parallelism.fsdp_reshard_after_forward"))}
    if out["zero"] is None:
        job.refuse("parallelism.fsdp_reshard_after_forward", "always also reshards the last block, norm and output")
        out["zero"] = 3
    mode, option = job.get("activation_checkpoint.mode"), job.get("activation_checkpoint.selective_ac_option")
    if mode not in AC:
        job.refuse("activation_checkpoint.mode", "a memory budget's solver is not modelled")
    out["recompute"] = AC.get(mode, "selective")
    if mode == "selective" and option != "op":
        if not option.isdigit() or int(option) < 1:
            job.refuse("activation_checkpoint.selective_ac_option", "op or a positive layer frequency")
        else:
            out["ac_every"] = int(option)
    compiled = job.get("compile.enable")
    if compiled and (job.get("compile.components") != ["model"] or job.get("compile.backend") != "inductor"):
        job.refuse(
            "compile.components",
            "the blocks under inductor are modelled: components = [\"model\"] (a compiled loss is not)",
        )
    out["compile"] = bool(compiled)
    converters = job.get("model.converters")
    if set(converters) - {"quantize.linear.float8"}:
        job.refuse("model.converters", "torchao's Float8 linears (quantize.linear.float8) are modelled")
    recipe = job.get("quantize.linear.float8.recipe_name") or "tensorwise"
    if "quantize.linear.float8" in converters and recipe not in ("tensorwise", "rowwise"):
        job.refuse("quantize.linear.float8.recipe_name", "tensorwise and rowwise are modelled")
    out["fp8"] = recipe if "quantize.linear.float8" in converters else "none"
    out["fp8_all_gather"] = out["fp8"] != "none" and job.get("quantize.linear.float8.enable_fsdp_float8_all_gather")
    # async TP (apply_tp: inductor's micro-pipelined TP on symmetric memory): its workspace, outside the pool
    out["tp_comm_overlap"] = bool(job.get("parallelism.enable_async_tensor_parallel"))
    if job.get("optimizer.name") != "AdamW":
        job.refuse("optimizer.name", "AdamW is modelled")
    for key, default in (("training.dtype", "float32"), ("training.mixed_precision_param", "bfloat16")):
        if job.get(key) != default:
            job.refuse(key, "FSDP2's mixed precision (fp32 shards, bf16 gathered) is modelled")
    schedule = job.get("parallelism.pipeline_parallel_schedule")
    if schedule != "1F1B":
        job.refuse("parallelism.pipeline_parallel_schedule", "1F1B (one stage per rank) is modelled")
    return {**out, "optimizer": "adamw", "recipe": "torchtitan"}


def _model(job: Job) -> tuple[ModelShape | None, str]:
    """The flavour's shape (None where it is no llama3 flavour mem4d reads) and the file's 'name flavor'."""
    name, flavor = job.get("model.name"), job.get("model.flavor")
    return (flavor_shape(flavor) if name == "llama3" and flavor in FLAVORS else None), f"{name} {flavor}"


def read(path: str, overrides: list[str]) -> Reading:
    """Read a torchtitan job file (ConfigError in one line naming every key mem4d does not model)."""
    job = load(path, overrides)
    parallel, local = _parallel(job)
    training = {**parallel, **_step(job), "local_batch": local}  # the global batch's default: local x d
    model, named = _model(job)
    refuse(path, job.problems, "key", VERSION)
    split = (
        job.get("parallelism.pipeline_parallel_first_stage_less_layers"),
        job.get("parallelism.pipeline_parallel_last_stage_less_layers"),
    )
    return Reading(model, named, training, split, job.overridden)
