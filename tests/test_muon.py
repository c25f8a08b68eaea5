"""--optimizer muon: Megatron-Core's Muon states.

Source of truth: megatron-core 0.16.1 optimizer/muon.py get_megatron_muon_optimizer (2-D weights but the embedding and
LM head under TensorParallelMuon, Float16OptimizerWithFloat16Params' fp32 master copies, muon_init_state_fn's one
momentum_buffer = zeros_like of that fp32 copy; everything else through get_megatron_optimizer's AdamW, fp32 master +
exp_avg + exp_avg_sq; use_distributed_optimizer raises) and optimizer/layer_wise_optimizer.py (the distributed version
deals whole parameters by size: --zero 1, tests/test_layerwise_muon.py; sharded gradients refused). Hand count on a
tiny shape; exact."""

import pytest

from symbolic.config.errors import ConfigError
from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.readers.megatron import read

TINY = ModelShape("tiny-muon", h=64, f=256, a=4, k=4, L=4, v=512)


def _optimizer(opt: str, **kw) -> dict:
    est = estimate(TINY, Training(d=2, p=2, s=32, b=1, gbs=4, zero=0, optimizer=opt, **kw))
    return {stage["stage"]: stage["bytes"]["optimizer"] for stage in est.stages}


def test_muon_keeps_8_bytes_on_layer_weights_and_adamw_on_the_rest():
    emb, head, norms = 512 * 64, 64 + 512 * 64, 2 * 2 * 64  # embedding; final norm + LM head; 2 layers' two RMSNorms
    linear = 2 * (4 * 64 * 64 + 3 * 64 * 256)  # 2 layers of q, k, v, o and gate, up, down
    assert _optimizer("muon") == {"first": 12 * (emb + norms) + 8 * linear, "last": 12 * (head + norms) + 8 * linear}
    assert _optimizer("adamw") == {"first": 12 * (emb + norms + linear), "last": 12 * (head + norms + linear)}


def test_routed_experts_are_muon_weights():
    moe = ModelShape("tiny-moe-muon", h=64, f=256, a=4, k=4, L=2, v=512, E=4, k_e=2, f_e=128)
    parts = {
        o: estimate(moe, Training(d=2, s=32, b=1, gbs=2, zero=0, ep=2, optimizer=o)).stages[0]["bytes"]
        for o in ("muon", "adamw")
    }
    experts = 2 * 2 * 3 * 64 * 128  # 2 layers x 2 local experts x gate, up, down
    assert parts["muon"]["expert_optimizer"] == 8 * experts and parts["adamw"]["expert_optimizer"] == 12 * experts


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"zero": 2}, "layer-wise distributed"),
        ({"zero": 3}, "give --zero 0 or 1"),
        ({"moment_dtype": "bf16"}, "fp32 momentum"),
    ],
)
def test_what_megatron_core_does_not_run_is_refused(kw, words):
    with pytest.raises(ConfigError, match=words):
        estimate(TINY, Training(**{"d": 2, "s": 32, "zero": 0, "optimizer": "muon", **kw}))


def test_other_recipes_refuse_it():
    with pytest.raises(ConfigError, match="Megatron-Core's Muon"):
        estimate(TINY, Training(d=2, s=32, zero=0, optimizer="muon"), profile="torchtitan")


def test_a_megatron_file_reads_muon_and_its_layer_wise_distributed_optimizer(tmp_path):
    base = (
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --seq-length 64 --bf16 --micro-batch-size 1 "
        "--optimizer muon --muon-momentum 0.9\n"
    )
    path = tmp_path / "args.txt"
    path.write_text(base)
    assert read(path).training["optimizer"] == "muon" and read(path).training["zero"] == 0
    path.write_text(base + "--use-distributed-optimizer\n")  # the layer-wise parameter layout: later than 0.16.1
    with pytest.raises(ConfigError, match="layer-wise parameter layout"):
        read(path)
    path.write_text(base + "--use-distributed-optimizer\n--no-use-layer-wise-param-layout\n")
    assert read(path).training["zero"] == 1


def test_learned_positions_are_a_muon_weight():
    # megatron-core 0.16.1 language_module.py flags only the word embedding and the LM head as embedding/output
    learned = ModelShape("tiny-muon-pos", h=64, f=256, a=4, k=4, L=4, v=512, positions=128)
    kw = {"d": 2, "s": 32, "b": 1, "gbs": 2, "zero": 0, "optimizer": "muon"}
    with_pos = estimate(learned, Training(**kw)).stages[0]["bytes"]["optimizer"]
    assert with_pos - estimate(TINY, Training(**kw)).stages[0]["bytes"]["optimizer"] == 8 * 128 * 64
