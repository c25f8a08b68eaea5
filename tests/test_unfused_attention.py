"""Unfused attention (--no-flash-attn; Megatron-LM's --attention-backend unfused or local) as Megatron's layer keeps it.

Source of truth: Transformer Engine 2.9.0 pytorch/attention/dot_product_attention/backends.py
UnfusedDotProductAttention.forward (baddbmm keeps Q and K, the fused softmax its output, P V's bmm the probabilities
and V; GQA keys and values repeat_interleave'd to the query heads) and softmax.py (FusedScaleMaskSoftmax
.is_kernel_available; ScaledSoftmax / ScaledMaskedSoftmax save_for_backward(softmax_results, scale_t)); megatron-core
0.16.1 transformer/dot_product_attention.py and fusions/fused_softmax.py alike for --transformer-impl local. Hand
counts on the tiny shape; exact."""

import contextlib
import io
import json

import pytest
import sympy as sp

from megatron_args import read_lines, small_gpt

from symbolic.cli.entry import main
from symbolic.components.attention import attention_tensors
from symbolic.config.errors import ConfigError
from symbolic.config.switches import Switches
from symbolic.config.symbols import B_a, a, b, c, dh, k, s, t

SCORES = a * s * s * b / (t * c)  # elements of one [b, a/t, s/c, s] tensor per GPU


def _square(sw: Switches) -> dict:
    return {p.name: p.expr for p in attention_tensors(sw) if p.expr.has(s**2)}


@pytest.mark.parametrize("mla", [False, True])
def test_the_fused_softmax_keeps_its_output_alone(mla):
    assert _square(Switches(flash_attn=False, mla=mla)) == {"softmax": B_a * SCORES}
    with_dropout = _square(Switches(flash_attn=False, mla=mla, dropout=True))
    assert with_dropout == {
        "softmax": B_a * SCORES,
        "softmax_dropout_mask": SCORES,
        "softmax_dropout_out": B_a * SCORES,
    }
    assert _square(Switches(mla=mla)) == {}


def test_gqa_keys_and_values_are_kept_repeated_to_the_query_heads():
    flash = {p.name: p.expr for p in attention_tensors(Switches())}
    unfused = {p.name: p.expr for p in attention_tensors(Switches(flash_attn=False))}
    for name in ("k", "v"):
        assert sp.simplify(flash[name] - B_a * s * b * k * dh / (t * c)) == 0
        assert sp.simplify(unfused[name] - B_a * s * b * a * dh / (t * c)) == 0


def _run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def test_the_estimate_adds_one_bf16_score_tensor_and_the_repeated_heads():
    # tiny: L = 8, a = 16, k = 4, dh = 16; s = 512, b = 1, t = 2: a/t = 8 heads of 512 x 512, keys and values 256
    # instead of 64 wide over 256 tokens; one micro batch at p = 1
    def activations(*extra):
        rc, out, _ = _run("estimate", "--model", "tiny", "--seq", "512", "--tp", "2", "--json", *extra)
        assert rc == 0
        return json.loads(out)["bytes"]["activations"]

    per_layer = 2 * 8 * 512 * 512 + 2 * 2 * 256 * (256 - 64)
    assert activations("--no-flash-attn") - activations() == 8 * per_layer


@pytest.mark.parametrize(
    "extra",
    [
        ("--model", "tiny", "--seq", "16384"),  # Transformer Engine's kernel: s < 16384
        ("--model", "tiny", "--seq", "8192", "--transformer-impl", "local"),  # Megatron-Core's: s <= 4096
        ("--model", "tiny", "--seq", "516"),  # s % 8
        ("--model", "llama2-7b", "--seq", "1024", "--tp", "16"),  # b a/t = 1 x 32/16: no multiple of 4
        ("--model", "tiny", "--seq", "1024", "--cp", "2"),  # no backend runs unfused attention with context parallelism
    ],
)
def test_shapes_the_fused_softmax_does_not_take_are_refused(extra):
    rc, out, err = _run("estimate", "--no-flash-attn", *extra)
    assert rc == 2 and out == "" and "the fused softmax kernel does not take it" in err, err


def test_megatron_core_without_its_softmax_fusion_is_refused_only_where_it_runs(tmp_path):
    base = small_gpt("--bf16 --micro-batch-size 4 --attention-backend unfused --no-masked-softmax-fusion")
    with pytest.raises(ConfigError, match="--no-masked-softmax-fusion \\(unfused attention's PyTorch softmax"):
        read_lines(tmp_path, base, "--transformer-impl local\n")
    te = read_lines(tmp_path, base, "--transformer-impl transformer_engine\n")  # TE's softmax does not read the flag
    assert te.training["flash_attn"] is False


def test_megatron_cores_local_layers_run_unfused_attention(tmp_path):
    """megatron-core 0.16.1 models/backends.py LocalSpecProvider.core_attention is DotProductAttention (the local
    spec, which Megatron-LM builds for --transformer-impl local whatever --attention-backend says): the reader reads
    such a file as unfused, and estimate refuses the local layers with flash attention in one line."""
    line = small_gpt("--bf16 --micro-batch-size 4 --transformer-impl local")
    assert read_lines(tmp_path, line).training["flash_attn"] is False
    rc, out, err = _run("estimate", "--model", "tiny", "--seq", "1024", "--transformer-impl", "local")
    assert rc == 2 and out == "" and "unfused whatever the attention backend" in err, err
    assert (
        _run("estimate", "--model", "tiny", "--seq", "1024", "--transformer-impl", "local", "--no-flash-attn")[0] == 0
    )
