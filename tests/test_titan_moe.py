"""torchtitan's MoE (--recipe torchtitan on a model with routed experts): what an MoE block saves, against the
listing of a real run of torchtitan 0.3.0's MoE layer in a block (records/torch-saved-cpu.jsonl, part moe_block,
written by benchmarks/torch_saved.py with torch 2.13.0 on the CPU: softmax top-2 without shared experts, sigmoid
top-3 with them, per checkpointing mode at ep = 1); the experts' sharding and gathering by hand from
distributed/fsdp.py; the refusals in one line.

Source of truth: that committed run (each storage once, the weights and the expert-bias buffer left out) and
torchtitan 0.3.0's code as cited in symbolic/recipes/torchtitan/moe.py. Tolerance: exact bytes."""

import json
from pathlib import Path

import pytest
import sympy as sp

from symbolic.config import symbols as S
from symbolic.config.shapes import ModelShape
from symbolic.config.switches import Switches
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.recipes import widths
from symbolic.recipes.torchtitan.fsdp2 import layer_tensors

RUN = [
    json.loads(line)
    for line in (Path(__file__).parents[1] / "records" / "torch-saved-cpu.jsonl").read_text().splitlines()
]
LISTINGS = [row for row in RUN if row["part"] == "moe_block"]


def test_the_moe_listings_are_there():
    """Twelve listings (two routings x ep = 1 and 2 x none, selective, full), none failed, from the torch the dense
    ones used."""
    assert sorted((row["name"], row["ep"], row["mode"]) for row in LISTINGS) == sorted(
        (name, ep, mode)
        for name in ("moe-softmax", "moe-sigmoid-shared")
        for ep in (1, 2)
        for mode in ("none", "selective", "full")
    )
    assert all("error" not in row and row["torch"].startswith("2.13") for row in LISTINGS)


@pytest.mark.parametrize("listing", LISTINGS, ids=lambda x: f"{x['name']}-ep{x['ep']}-{x['mode']}")
def test_moe_block_listing_equals_the_run(listing):
    """layer_tensors(moe=True) at the run's sizes (bf16, t = c = 1) equals every byte the block held for backward:
    the attention's and the ffn norm's tensors, the router's, the dispatch's, the grouped GEMMs', the combine's and
    the shared experts'; without checkpointing also the gate's fp32 weight cast and the grouped GEMMs' offsets (no
    token's, saved every micro batch). At ep = 2 (rank 0 of a fake group, the routing balanced by torchtitan's
    moe_force_load_balance, so C_f = 1) the all-to-all's permutation, or under SAC both all-to-alls' outputs."""
    z = listing["sizes"]
    at = {getattr(S, x): z[x] for x in ("b", "s", "h", "a", "k", "E", "k_e", "f_e", "f_s")}
    at |= {S.dh: z["h"] // z["a"], S.t: 1, S.c: 1, S.e: listing["ep"], S.C_f: 1, S.B_a: 2}
    sw = Switches(recompute=listing["mode"], moe=True, shared=z["f_s"] > 0, sigmoid=z["sigmoid"])
    symbolic = sp.Add(*(part.expr for part in layer_tensors(sw, moe=True))).subs(at)
    assert symbolic == listing["bytes"] == sum(x["bytes"] for x in listing["tensors"])
    others = [x["shape"] for x in listing["tensors"] if not x["per_token"]]
    assert others == ([[z["h"], z["E"]], [z["E"] // listing["ep"]]] if listing["mode"] == "none" else [])


MOE = ModelShape("titan-moe", h=1024, f=2816, a=16, k=4, L=8, v=32000, E=16, k_e=2, f_e=512)


def _training(**kw) -> Training:
    return Training(
        **{**widths("torchtitan"), "d": 8, "b": 2, "s": 4096, "gbs": 16, "zero": 3, "ep": 4, "recompute": "full", **kw}
    )


def test_experts_sharded_and_gathered_by_hand():
    """Every parameter, the routed experts with the rest, is a 1/(d c) shard (ep x efsdp = 4 x 2 = d), fp32 weights,
    gradients and two AdamW moments (16 bytes); FSDP2 holds bf16 the root group and two blocks, each with its router
    and E/ep = 4 local experts (reshard after forward, p = 1)."""
    stage = estimate(MOE, _training(), "torchtitan").stages[0]["bytes"]
    attention = 2 * 1024 * 64 * (16 + 4)
    block = attention + 2 * 1024 + 1024 * 16  # attention, two norms, the router
    params = 32000 * 1024 * 2 + 1024 + 8 * (block + 16 * 3 * 1024 * 512)
    assert stage["weights"] + stage["gradients"] + stage["optimizer"] == 16 * params / 8
    gathered_block = block + 4 * 3 * 1024 * 512
    assert stage["params_gathered"] == 2 * (32000 * 1024 * 2 + 1024 + 2 * gathered_block)
    assert stage["routing_buffers"] == 8 * 2 * 4 * 16


def test_expert_parallel_adds_the_all_to_alls_tensors():
    """At ep > 1 without checkpointing each MoE block keeps the permutation [R] int64 beside R = C_f k_e T rows (and
    int32 offsets for E/ep experts, not E); under op SAC it keeps both all-to-alls' outputs, [R, h] and [N, h] bf16.
    At ep = 1 (C_f = 1) none of them."""
    tokens, h, rows = 2 * 4096, 1024, 2 * 2 * 4096
    one = {
        mode: estimate(MOE, _training(ep=1, recompute=mode), "torchtitan").stages[0]["bytes"]["activations"]
        for mode in ("none", "selective")
    }
    four = {
        mode: estimate(MOE, _training(recompute=mode), "torchtitan").stages[0]["bytes"]["activations"]
        for mode in ("none", "selective")
    }
    assert four["none"] - one["none"] == 8 * (8 * rows - 4 * (16 - 16 // 4))
    assert four["selective"] - one["selective"] == 8 * (2 * rows * h + 2 * rows * h)
    assert tokens * 2 == rows


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--tp", "2"], "at tp = 1"),
        (["--compile"], "eager and in bf16"),
        (["--fp8", "tensorwise"], "eager and in bf16"),
        (["--recompute", "selective", "--ac-every", "2"], "--ac-every 2"),
        (["--recipe", "deepspeed"], "DeepSpeed's MoE"),
    ],
)
def test_what_torchtitans_moe_refuses_is_one_line(flags, says, tmp_path, capsys):
    """Each refusal: exit 2, one line on stderr naming it (the `mem4d` entry point, in this process)."""
    from symbolic.cli.entry import main

    model = tmp_path / "moe.json"
    model.write_text(
        json.dumps(
            {
                "model_type": "mixtral",
                "hidden_size": 256,
                "intermediate_size": 512,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "num_hidden_layers": 2,
                "vocab_size": 1000,
                "num_local_experts": 8,
                "num_experts_per_tok": 2,
            }
        )
    )
    recipe = [] if "--recipe" in flags else ["--recipe", "torchtitan"]  # a flag is given once
    args = [*recipe, "--model", str(model), "--dp", "8", "--ep", "2", "--seq", "1024", *flags]
    assert main(["estimate", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and says in err, err
