"""The step time of what a model provider sets and what gpt-oss's layers are: the sliding window's keys, the eager
RoPE, the unfused bias-dropout-add, the native cross entropy and the experts' clamp, each by hand from the passes its
docstring counts in megatron-core 0.16.1 (exact, sympy), and the attention rates from their published figures."""

import json

import pytest
import sympy as sp

from symbolic.config.hfconfig import from_hf_config
from symbolic.config.training import Training
from symbolic.config.symbols import B_a, L, L_e, f_e, h, k_e, p, s, v
from symbolic.time import flops
from symbolic.time.cards import CARDS, fwd_bwd
from symbolic.time.choices import Choices
from symbolic.time.kernels import layer_kernels, loss
from symbolic.time.provider import Provider
from symbolic.time.step import micro_batch
from symbolic.time.symbols import W_hbm

TOK = sp.Symbol("tok", positive=True)
MOE = Choices(True, False, False, 3, "none", ("core_attn",), 1)  # an MoE model, no recompute


def _part(parts, name):
    return next(x.expr for x in parts if x.name == name)


def test_gpt_oss_window_read_and_its_share_of_causal_keys(tmp_path):
    # gpt-oss-20b's config.json: layer_types alternate sliding (128 keys, GptOssConfig's default) and full; a query at
    # position i meets min(i, w) keys: at s = 4096, (2 w - w^2/s)/s of causal's s/2 on the sliding half
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt_oss", "num_hidden_layers": 4, "num_local_experts": 8}))
    shape = from_hf_config(path)
    assert shape.layer_window == (128, 0, 128, 0)
    assert Choices.of(shape, Training()).window == (128, 2, 4)
    share = flops.window_share((128, 2, 4)).subs(s, 4096)
    assert share == sp.Rational(1, 2) + sp.Rational(1, 2) * (sp.Rational(256, 4096) - sp.Rational(128**2, 4096**2))
    assert flops.window_share((4096, 4, 4)).subs(s, 4096) == 1 and flops.window_share((0, 0, 1)) == 1


def test_provider_kernels_by_hand():
    # passes of a token's elements at HBM speed: RoPE eager 12 + 15 for TE's 2 + 2; the attention output's bias
    # added apart, 2 passes of [h] forward; the native cross entropy 2 B_a + 24 bytes of [v] for TE's 5 B_a; the
    # clamp 8 + 10 passes of [f_e] on each of the k_e copies (exact)
    gpt = MOE._replace(out_bias=True)
    eager = gpt._replace(rope_fused=False, bda_fused=False, clamp=True, cross_entropy="native")
    fused_k, eager_k = layer_kernels(gpt, TOK), layer_kernels(eager, TOK)
    assert sp.simplify(_part(eager_k, "T_rope") / _part(fused_k, "T_rope")) == sp.Rational(27, 4)
    assert _part(fused_k, "T_bda") == 0
    assert sp.simplify(_part(eager_k, "T_bda") - TOK * B_a / W_hbm * L / p * h * 2) == 0
    te, native = loss(gpt, TOK).expr, loss(eager, TOK).expr
    assert sp.simplify((native / te).subs(B_a, 2)) == sp.Rational(28, 10)
    clamp = _part(micro_batch(eager), "T_clamp")
    tok = s * sp.Symbol("b", positive=True) / (sp.Symbol("c", positive=True) * sp.Symbol("t", positive=True))
    assert _part(micro_batch(gpt), "T_clamp") == 0
    assert sp.simplify(clamp - (L_e / p) * tok * k_e * f_e * B_a * 18 / W_hbm) == 0
    assert v in te.free_symbols


def test_provider_defaults_are_the_fused_kernels():
    # YaRN with a concentration factor (0.1 ln 32 + 1 != 1) leaves TE's fused RoPE (rope_utils.py:279-284)
    # and apply_rope_fusion off (megatron-core 0.16.1 transformer_config.py:371's default) runs the eager one
    assert Provider().rope_fused and not Provider(yarn=32.0).rope_fused and not Provider(rope_fusion=False).rope_fused
    assert Provider() == Provider(0.0, 0.0, True, "te", True)


def test_attention_rates_from_their_published_figures():
    # cuDNN beside FA3 on Hopper 600 / 646 (FA3 paper Fig. 5), FA4 1.3x cuDNN on Blackwell; FA4's forward 1613
    # taken forward + backward with FA2's backward at 63/73 of its forward (1e-9 relative; the figure one decimal)
    assert CARDS["h100-80gb"].attn_cudnn == pytest.approx(462 * 600 / 646, rel=1e-9)
    assert CARDS["gb200-186gb"].attn_cudnn == pytest.approx(CARDS["gb200-186gb"].attn / 1.3, rel=1e-9)
    assert CARDS["a100-80gb"].attn_cudnn == CARDS["a100-80gb"].attn
    assert (
        CARDS["b200-192gb"].attn == fwd_bwd(1613) == pytest.approx(3.5 / (1 / 1613 + 2.5 * 73 / (63 * 1613)), abs=0.05)
    )
