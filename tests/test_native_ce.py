"""--native-ce: Megatron-Core's native fused cross entropy under torch.compile (megatron-core 0.16.1 = Megatron-LM
d98e8a64 fusions/fused_cross_entropy.py, jit.py's jit_fuser = torch.compile).

Source of truth: the compiled backward read on the CPU with torch 2.13.0's inductor (calculate_gradients' post-grad
graph: aten.index_put, a product, copy_ into the saved softmax; its generated code allocates one fp32 [b s, v/t]
beside the bf16 output), and the reader's table of Megatron-LM's arguments. Exact (symbolic and to the byte)."""

from dataclasses import replace

import pytest

from symbolic.components.ends import native_ce_temporary
from symbolic.config.errors import ConfigError
from symbolic.config.hfconfig import resolve_model
from symbolic.config.switches import Switches
from symbolic.config.symbols import B_l, b, c, s, t, v
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate, memory_kinds
from symbolic.readers.megatron import read


def test_the_backward_holds_an_fp32_copy_of_the_logits_size():
    (part,) = native_ce_temporary(Switches(native_ce=True, sp=False))
    assert (part.expr - B_l * s * b * v / (t * c)).simplify() == 0
    assert native_ce_temporary(Switches()) == []


def test_the_head_stage_holds_it_beside_the_bf16_logits():
    """tiny at tp 2: the temporary is the fp32 [s b, v/t] on the head's stage, 4 s b v / 2 bytes, and the rank's
    allocated peak grows by exactly that."""
    shape = resolve_model("tiny")
    training = Training(t=2, gbs=4)
    plain, native = (
        memory_kinds(estimate(shape, replace(training, native_ce=flag)).stages[-1]["bytes"]) for flag in (False, True)
    )
    temporary = estimate(shape, replace(training, native_ce=True)).stages[-1]["bytes"]["ce_backward_temporary"]
    assert temporary == 4 * training.s * training.b * shape.v // 2
    assert native["allocated_bytes"] - plain["allocated_bytes"] == temporary


def test_rules_refuse_it_beside_bf16_logits_or_another_recipe():
    with pytest.raises(ConfigError, match="upcasts the logits to fp32"):
        estimate(resolve_model("tiny"), Training(gbs=4, native_ce=True, logits="bf16"))
    with pytest.raises(ConfigError, match="Megatron-LM's --cross-entropy-fusion-impl native"):
        estimate(resolve_model("tiny"), Training(gbs=4, native_ce=True), profile="torchtitan")


@pytest.mark.parametrize(
    "extra,native",
    [
        ("--cross-entropy-loss-fusion", True),
        ("--cross-entropy-loss-fusion --cross-entropy-fusion-impl te", False),
        ("", False),
    ],
)
def test_a_megatron_file_reads_it(tmp_path, extra, native):
    path = tmp_path / "args.txt"
    path.write_text(
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --seq-length 64 --bf16 "
        f"--micro-batch-size 1 {extra}\n"
    )
    assert read(path).training["native_ce"] is native
