"""The one table of validity rules: each a predicate, a one-line message and the profiles it binds (no sympy)."""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import numpy as np

from .errors import BrokenRule
from .step import FLASH_BLOCK

# every profile, jaxcheck's step alone (plan --profile jax, compile, verify, sweep), or one trainer's recipe
# recipes: torchtitan and deepspeed alike; "!torchtitan": every profile but torchtitan
SCOPES = ("all", "jax", "torchtitan", "deepspeed", "recipes", "!torchtitan", "!deepspeed", "!jax", "!paper")


@dataclass(frozen=True)
class Rule:
    """One rule: `holds(x)` is True (or a boolean array) where a configuration satisfies it, `message(x)` one line."""

    name: str
    holds: Callable
    message: Callable
    scope: str = "all"  # one of SCOPES
    model: bool = False  # reads the model's letters (a, k, f, L, v, dh): checked by Training.check(shape)
    policy: bool = False  # reads the recompute policy (no plan grid column): plan filters its (recompute, zero) pairs


def _uneven(x) -> bool:
    """True where stages are uneven: --stage-layers given (one config), or a balanced row of plan (arrays)."""
    return x.uneven


def _has(x, module: str) -> bool:
    """Whether --recompute-modules names `module` (one configuration's string)."""
    return module in x.recompute_modules.split(",")


def _split(x) -> str:
    """--stage-layers as given ("7,8,8,7"; "" when none was)."""
    return ",".join(map(str, x.stage_layers or ()))


RULES: tuple[Rule, ...] = (
    # the training config alone (Training.__post_init__)
    Rule("gbs % (b d)", lambda x: x.gbs % (x.b * x.d) == 0,
         lambda x: f"global batch gbs={x.gbs} not divisible by mbs x dp = {x.b}x{x.d} = {x.b * x.d}"),
    Rule("s % 2c", lambda x: (x.c == 1) | (x.s % (2 * x.c) == 0),
         lambda x: f"sequence length s={x.s} not divisible by 2 x cp = {2 * x.c} (load-balanced causal context parallel)"),
    Rule("s % (t c)", lambda x: np.logical_not(x.sp) | (x.t == 1) | (x.s % (x.t * x.c) == 0),
         lambda x: f"sequence length s={x.s} not divisible by tp x cp = {x.t * x.c} (sequence parallel)"),
    Rule("vpp > 1 needs p > 1", lambda x: (x.vpp == 1) | (x.p > 1),
         lambda x: f"virtual pipeline stages vpp={x.vpp} need pipeline parallel pp > 1"),
    Rule("m % p (vpp > 1)", lambda x: (x.vpp == 1) | (x.m % x.p == 0),
         lambda x: f"interleaved 1F1B needs micro batches m={x.m} divisible by pp={x.p}"),
    Rule("--recompute-modules with selective", lambda x: (x.recompute_modules == "core_attn") | (x.recompute == "selective"),
         lambda x: (f"--recompute-modules {x.recompute_modules} names what selective recompute reruns, but "
                    f"--recompute is {x.recompute}: give --recompute selective"), policy=True),
    Rule("e t_e | d t c", lambda x: (x.d * x.t * x.c) % (x.e * x.t_e) == 0,
         lambda x: (f"expert parallel x expert tensor parallel = ep x etp = {x.e}x{x.t_e} must divide the dp x tp x cp "
                    f"= {x.d}x{x.t}x{x.c} = {x.d * x.t * x.c} ranks of a pipeline stage (Megatron-Core folds the "
                    f"expert groups over them)")),
    # --stage-layers (plan's balanced rows carry no tuple: their splits are built to satisfy these)
    Rule("stage layers: p entries", lambda x: x.stage_layers is None or len(x.stage_layers) == x.p,
         lambda x: (f"--stage-layers {_split(x)} has {len(x.stage_layers or ())} entries, but pp={x.p}: give one "
                    f"layer count per pipeline stage")),
    Rule("stage layers % vpp", lambda x: x.stage_layers is None or all(n % x.vpp == 0 for n in x.stage_layers),
         lambda x: f"--stage-layers {_split(x)}: with vpp={x.vpp} each stage's layers form vpp chunks, so every entry "
                   f"must be a multiple of {x.vpp}"),
    # the training config on a model (Training.check)
    Rule("a % t", lambda x: x.a % x.t == 0,
         lambda x: f"tensor parallel t={x.t} does not divide attention heads a={x.a} of {x.model}", model=True),
    Rule("k % t", lambda x: x.k % x.t == 0,
         lambda x: f"tensor parallel t={x.t} does not divide KV heads k={x.k} of {x.model}", model=True),
    Rule("f % t", lambda x: (x.f % x.t == 0) | ((x.E > 0) & (x.L_e == x.L)),
         lambda x: f"tensor parallel t={x.t} does not divide MLP size f={x.f} of {x.model}", model=True),
    Rule("e > 1 needs experts", lambda x: (x.E > 0) | ((x.e == 1) & (x.t_e == x.t)),
         lambda x: (f"--ep {x.e} / --etp {x.t_e}: {x.model} has no routed experts, so expert parallelism does not apply "
                    f"(leave ep = 1 and etp = tp)"), model=True),
    Rule("E % e", lambda x: x.E % x.e == 0,
         lambda x: f"expert parallel ep={x.e} does not divide the E={x.E} routed experts of {x.model}", model=True),
    Rule("f_e % t_e", lambda x: x.f_e % x.t_e == 0,
         lambda x: (f"expert tensor parallel etp={x.t_e} does not divide the expert width f_e={x.f_e} of {x.model} "
                    f"(give --etp)"), model=True),
    Rule("f_s % t", lambda x: x.f_s % x.t == 0,
         lambda x: f"tensor parallel t={x.t} does not divide the shared experts' width f_s={x.f_s} of {x.model}",
         model=True),
    Rule("mla_up_proj needs MLA", lambda x: x.mla | np.logical_not(_has(x, "mla_up_proj")),
         lambda x: f"--recompute-modules mla_up_proj: {x.model} has no multi-head latent attention", model=True),
    Rule("moe_act needs experts", lambda x: (x.E > 0) | np.logical_not(_has(x, "moe_act")),
         lambda x: f"--recompute-modules moe_act: {x.model} has no routed experts", model=True),
    Rule("MoE with t > 1 needs SP", lambda x: (x.E == 0) | (x.t == 1) | x.sp,
         lambda x: (f"{x.model} has routed experts: with tensor parallel t={x.t} Megatron-Core requires sequence "
                    f"parallelism (drop --no-sp)"), model=True),
    Rule("L % (p vpp)", lambda x: _uneven(x) | (x.L % (x.p * x.vpp) == 0),
         lambda x: (f"pipeline stages pp x vpp = {x.p}x{x.vpp} = {x.p * x.vpp} do not divide layers L={x.L} "
                    f"of {x.model}: give --stage-layers (pp entries summing to {x.L}) or --balance"), model=True),
    Rule("stage layers sum to L", lambda x: x.stage_layers is None or sum(x.stage_layers) == x.L,
         lambda x: f"--stage-layers {_split(x)} sum to {sum(x.stage_layers or ())}, but {x.model} has L={x.L} layers",
         model=True),
    Rule("uneven: whole chunks", lambda x: np.logical_not(_uneven(x)) | ((x.L % x.vpp == 0) & (x.p * x.vpp <= x.L)),
         lambda x: (f"uneven stages of vpp={x.vpp} chunks each need L={x.L} of {x.model} to be a multiple of vpp and "
                    f"at least pp x vpp = {x.p * x.vpp}"), model=True),
    # jaxcheck's own limits
    Rule("v % t", lambda x: x.v % x.t == 0,
         lambda x: (f"tensor parallel t={x.t} does not divide vocabulary v={x.v} of {x.model} (jaxcheck shards the "
                    f"embedding and head evenly over tensor; pad v to a multiple of t)"), scope="jax", model=True),
    Rule("vpp == 1", lambda x: x.vpp == 1,
         lambda x: (f"jaxcheck compiles one SPMD program of pp stages, one model chunk per device (interleaved 1F1B "
                    f"needs vpp chunks per device on a circular clock, not built): got vpp={x.vpp}"), scope="jax"),
    Rule("even stages", lambda x: np.logical_not(_uneven(x)),
         lambda x: ("jaxcheck vmaps its pp stages in one SPMD program, so every stage has L/pp layers: uneven stages "
                    "(--stage-layers, --balance) are for the paper profile and the recipes"), scope="jax"),
    Rule("--recompute-modules: Megatron only", lambda x: x.recompute_modules == "core_attn",
         lambda x: (f"--recompute-modules {x.recompute_modules} is Megatron-Core's (--recipe megatron); jaxcheck's "
                    f"and the other recipes' selective policies are their own"), scope="!paper"),
    Rule("gpipe: jaxcheck only", lambda x: x.schedule == "1f1b",
         lambda x: ("--schedule gpipe is jaxcheck's (compile, verify, sweep, --profile jax): the paper's formulas and "
                    "the trainers' recipes count 1F1B"), scope="!jax"),
    Rule("s % flash block", lambda x: np.logical_not(x.flash_attn) | (x.s % np.minimum(x.s, FLASH_BLOCK) == 0),
         lambda x: (f"flash attention runs over key blocks of {FLASH_BLOCK}: sequence s={x.s} must be a multiple of "
                    f"{FLASH_BLOCK} (or shorter), or pass --no-flash-attn"), scope="jax"),
    Rule("dh % 2", lambda x: x.mla | (x.dh % 2 == 0), lambda x: f"RoPE needs an even head width, got dh={x.dh}",
         scope="jax", model=True),  # MLA rotates its d_r part only, even by ModelShape's check
    Rule("e | d (jax)", lambda x: x.d % x.e == 0,
         lambda x: (f"jaxcheck folds expert parallel over data parallel only: ep={x.e} must divide dp={x.d} "
                    f"(Megatron-Core also folds it over tp and cp)"), scope="jax"),
    Rule("t_e in {1, t} (jax)", lambda x: (x.t_e == 1) | (x.t_e == x.t),
         lambda x: (f"jaxcheck splits each expert over all tp={x.t} tensor ranks or none: etp={x.t_e} must be 1 or "
                    f"{x.t}"), scope="jax"),
    Rule("mixed layers: p = 1, dense first (jax)",
         lambda x: (x.L_e == x.L) | (x.L_e == 0) | ((x.p == 1) & x.dense_first),
         lambda x: (f"{x.model} mixes {x.L - x.L_e} dense and {x.L_e} MoE layers: jaxcheck stacks them as two "
                    f"stacks only with pp=1 and the dense layers first (got pp={x.p})"), scope="jax", model=True),
    Rule("jax precision", lambda x: np.logical_not(x.master_weights) & (x.optimizer == "adamw") & (x.logits == "fp32")
         & (x.weight_dtype == x.grad_dtype) & (x.grad_dtype == x.moment_dtype),
         lambda x: ("jaxcheck's step is AdamW on its parameters (no master copy), gradients and moments in the param "
                    "dtype, fp32 logits: set its precision with --param-dtype / --compute-dtype"), scope="jax"),
    # the trainers' recipes (profiles/torchtitan.py, profiles/deepspeed.py)
    Rule("torchtitan: FSDP2", lambda x: (x.zero == 2) | (x.zero == 3),
         lambda x: (f"torchtitan shards with FSDP2 (fully_shard): --zero 3 (reshard after forward, its default) or 2 "
                    f"(--parallelism.fsdp_reshard_after_forward never); got --zero {x.zero}"), scope="torchtitan"),
    Rule("torchtitan: its precision", lambda x: np.logical_not(x.master_weights) & (x.logits == "fp32"),
         lambda x: ("torchtitan keeps no separate master copy (its sharded parameters are the master) and its loss "
                    "upcasts the logits to fp32 (train.py at 9dec370): --master-weights and --logits other than fp32 "
                    "are not what it allocates"), scope="torchtitan"),
    Rule("torchtitan: none with t = 1", lambda x: (x.recompute != "none") | (x.t == 1),
         lambda x: (f"the torchtitan recipe counts what eager autograd keeps without checkpointing at tp=1 only (its "
                    f"tensor-parallel plan's saved tensors are not modelled): got --recompute none with tp={x.t}"),
         scope="torchtitan", policy=True),
    Rule("torchtitan: --ac-every with selective", lambda x: (x.ac_every is None) | (x.recompute == "selective"),
         lambda x: (f"--ac-every {x.ac_every} is torchtitan's selective per-layer checkpointing "
                    f"(selective_ac_option = N): give it with --recompute selective, got --recompute {x.recompute}"),
         scope="torchtitan", policy=True),
    Rule("--ac-every: torchtitan only", lambda x: x.ac_every is None,
         lambda x: (f"--ac-every {x.ac_every} is torchtitan's selective per-layer checkpointing: give it with "
                    f"--recipe torchtitan"), scope="!torchtitan"),
    Rule("--no-zero-init: DeepSpeed only", lambda x: x.zero_init,
         lambda x: "--no-zero-init describes a DeepSpeed ZeRO-3 model built outside deepspeed.zero.Init: give it with "
                   "--recipe deepspeed --zero 3", scope="!deepspeed"),
    Rule("deepspeed: --no-zero-init at ZeRO-3", lambda x: x.zero_init | (x.zero == 3),
         lambda x: (f"--no-zero-init is ZeRO-3's (stages 1 and 2 gather no weights): got --zero {x.zero}"),
         scope="deepspeed", policy=True),
    Rule("--no-grad-accum-fusion: Megatron only", lambda x: x.grad_accum_fusion,
         lambda x: ("--no-grad-accum-fusion is Megatron-LM's --no-gradient-accumulation-fusion: give it with --recipe "
                    "megatron"), scope="recipes"),
    Rule("deepspeed: fp32 gradients at ZeRO 1 or 3", lambda x: (x.grad_dtype == "bf16") | (x.zero != 2),
         lambda x: ("DeepSpeed ZeRO-2 with grad_accum_dtype fp32 (--grad-dtype fp32) is not modelled (stage 1 runs "
                    "BF16_Optimizer, stage 3 partitions fp32 gradients): --grad-dtype bf16, or --zero 1 or 3"),
         scope="deepspeed"),
    Rule("deepspeed: ZeRO 1-3", lambda x: x.zero >= 1,
         lambda x: ("DeepSpeed with bf16 and ZeRO stage 0 runs its bf16 DDP path (engine.py: DDP_BFLOAT16), "
                    "which the deepspeed recipe does not model: --zero 1, 2 or 3"), scope="deepspeed"),
    Rule("recipes: dense models", lambda x: x.E == 0,
         lambda x: (f"{x.model} has routed experts: the torchtitan and deepspeed recipes model dense Llama models "
                    f"(use --recipe megatron)"), scope="recipes", model=True),
    Rule("Llama layers (jax)", lambda x: (x.mlp == "swiglu") & (x.norm == "rms") & (x.positions == 0)
         & np.logical_not(x.dropout),
         lambda x: (f"{x.model} is a GPT-style model (GeLU MLP, LayerNorm, learned positions or dropout): jaxcheck "
                    f"builds Llama layers (the recipes' profiles count it)"), scope="jax", model=True),
    Rule("no multi-token prediction or score bias (jax)",
         lambda x: (x.mtp == 0) & np.logical_not(x.expert_bias) & np.logical_not(x.sigmoid),
         lambda x: (f"{x.model} has multi-token-prediction modules, an expert score-correction bias or sigmoid "
                    f"router scores, which jaxcheck's model does not build (the paper profile counts them)"),
         scope="jax", model=True),
    Rule("recipes: GQA attention", lambda x: np.logical_not(x.mla),
         lambda x: (f"{x.model} has multi-head latent attention: the torchtitan and deepspeed recipes model GQA "
                    f"attention (use --recipe megatron)"), scope="recipes", model=True),
    Rule("no biases or q/k norms (jax)", lambda x: np.logical_not(x.bias) & (x.qk_norm == "none"),
         lambda x: (f"{x.model} has biases or q/k norms, which jaxcheck's attention and MLP do not have (the paper "
                    f"profile counts them)"), scope="jax", model=True),
)


RECIPE_SCOPES = ("torchtitan", "deepspeed")  # the scopes the "recipes" rules also bind


def select(scope: str = "all", model: bool | None = None, policy: bool | None = None) -> tuple[Rule, ...]:
    """The rules that bind `scope` (those of every profile, plus the scope's own), in table order; `model` keeps only
    the rules that read (True) or do not read (False) the model, `policy` those that read only recompute and zero."""
    scopes = ("all", scope) + (("recipes",) if scope in RECIPE_SCOPES else ())
    # "!name" binds each profile but name (not "all": what every profile checks when a Training is built)
    binds = lambda rule: rule.scope in scopes or rule.scope[:1] == "!" and scope not in ("all", rule.scope[1:])  # noqa: E731
    return tuple(rule for rule in RULES if binds(rule) and model in (None, rule.model)
                 and policy in (None, rule.policy))


def letters(training, shape=None) -> SimpleNamespace:
    """What the rules read from a Training (gbs as given, else p b d; m = gbs // (b d)) and, given, a ModelShape.

    Python ints here; plan builds the same namespace from numpy int arrays of every candidate (its balanced rows with
    uneven True and no stage_layers tuple), and the predicates use only operators that work on both."""
    gbs = training.p * training.b * training.d if training.gbs is None else training.gbs
    x = dict(d=training.d, t=training.t, p=training.p, c=training.c, vpp=training.vpp, s=training.s, b=training.b,
             gbs=gbs, m=gbs // (training.b * training.d), sp=training.sp, flash_attn=training.flash_attn,
             zero=training.zero, stage_layers=training.stage_layers, uneven=training.stage_layers is not None,
             e=training.ep, t_e=training.etp_size, C_f=training.moe_capacity, recompute=training.recompute,
             ac_every=training.ac_every, zero_init=training.zero_init, grad_accum_fusion=training.grad_accum_fusion,
             schedule=training.schedule, recompute_modules=training.recompute_modules,
             **{name: getattr(training, name) for name in PRECISION})
    return SimpleNamespace(**x, **(model_letters(shape) if shape is not None else {}))


PRECISION = ("weight_dtype", "grad_dtype", "master_weights", "optimizer", "moment_dtype", "logits")


def model_letters(shape) -> dict:
    """What the rules read from a ModelShape."""
    return dict(model=shape.name, a=shape.a, k=shape.k, f=shape.f, L=shape.L, v=shape.v, dh=shape.dh, E=shape.E,
                f_e=shape.f_e, f_s=shape.f_s, L_e=shape.L_e, qk_norm=shape.qk_norm,
                bias=shape.qkv_bias or shape.o_bias or shape.mlp_bias, mlp=shape.mlp, norm=shape.norm,
                positions=shape.positions, dropout=shape.dropout, mla=shape.mla, mtp=shape.mtp,
                expert_bias=shape.expert_bias, sigmoid=shape.sigmoid,
                dense_first=shape.dense_layers == tuple(range(len(shape.dense_layers))))


def check(x: SimpleNamespace, rules: tuple[Rule, ...]) -> None:
    """Raise BrokenRule (a one-line ConfigError) naming the first rule in `rules` that x breaks."""
    for rule in rules:
        if not rule.holds(x):
            raise BrokenRule(rule.name, rule.message(x))


def masks(x: SimpleNamespace, rules: tuple[Rule, ...], n: int) -> dict[str, np.ndarray]:
    """One boolean array of length n per rule (True where it holds), for x holding arrays of n candidates."""
    return {rule.name: np.broadcast_to(np.asarray(rule.holds(x), dtype=bool), (n,)) for rule in rules}
