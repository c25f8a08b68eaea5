"""Classic-GPT activation identities of Korthikanti et al. 2022 (arXiv 2205.05198, sections 4-5) and the schedule factors.

Source of truth: the paper's closed forms (fp16, GELU MLP f = 4h, MHA k = a, dropout, no flash attention).
Tolerance: exact (sympy simplify(diff) == 0) for expressions; exact rationals for the schedule counts.
"""

import sympy as sp

from symbolic.components import in_flight, interleave_factor, layer_activation
from symbolic.config.switches import Switches
from symbolic.config.symbols import B_a, a, b, c, dh, f, h, k, m, p, s, t, vpp

GPT = {B_a: 2, f: 4 * h, k: a, c: 1, dh: h / a}


def gpt_layer(sp_on: bool, recompute: str = "none", t_value=None) -> sp.Expr:
    sw = Switches(recompute=recompute, flash_attn=False, sp=sp_on, overheads=False)
    expr = layer_activation(sw, gpt=True).subs(GPT)
    return expr.subs(t, t_value) if t_value is not None else expr


def test_single_gpu_layer_is_34_plus_5as_over_h():
    """t = 1, no SP: s*b*h*(34 + 5*a*s/h)."""
    assert sp.simplify(gpt_layer(False, t_value=1) - s * b * h * (34 + 5 * a * s / h)) == 0


def test_tensor_and_sequence_parallel_divide_by_t():
    """TP + SP: s*b*h*(34 + 5*a*s/h)/t."""
    assert sp.simplify(gpt_layer(True) - s * b * h * (34 + 5 * a * s / h) / t) == 0


def test_tensor_parallel_without_sp_keeps_10sbh_replicated():
    """TP without SP: s*b*h*(10 + 24/t + 5*a*s/(h*t))."""
    assert sp.simplify(gpt_layer(False) - s * b * h * (10 + 24 / t + 5 * a * s / (h * t))) == 0


def test_selective_recompute_drops_the_attention_core():
    """Selective recompute with TP + SP: 34*s*b*h/t."""
    assert sp.simplify(gpt_layer(True, "selective") - 34 * s * b * h / t) == 0


def test_full_recompute_keeps_the_layer_input():
    """Full recompute: 2*s*b*h per layer, /t with SP."""
    assert sp.simplify(gpt_layer(False, "full") - 2 * s * b * h) == 0
    assert sp.simplify(gpt_layer(True, "full") - 2 * s * b * h / t) == 0


def test_llama_layer_applies_the_same_recompute_rules():
    """Llama layer without flash attention: selective recompute removes exactly the s^2 term (the fused softmax's
    output) and the keys and values repeated to the a query heads (its checkpoint keeps them k*dh wide)."""
    none = layer_activation(Switches(flash_attn=False, overheads=False))
    selective = layer_activation(Switches(flash_attn=False, recompute="selective", overheads=False))
    flash = layer_activation(Switches(overheads=False))
    repeated = 2 * B_a * s * b * (a - k) * dh / (t * c)
    assert sp.simplify(none - selective - B_a * a * s**2 * b / (t * c) - repeated) == 0
    assert sp.simplify(selective - flash) == 0


def test_interleaved_first_stage_factor():
    """Rank 0 with enough micro batches holds p*(1 + (p-1)/(p*vpp)) stage-equivalents (exact rationals)."""
    for p_value in range(2, 9):
        for vpp_value in range(2, 5):
            n = in_flight(sp.Integer(0)).subs({p: p_value, vpp: vpp_value, m: 100 * p_value})
            assert n == p_value * interleave_factor().subs({p: p_value, vpp: vpp_value})


def test_fewer_micro_batches_than_stages_scale_by_m_over_p():
    """1F1B with m < p: the first stage holds m micro batches, i.e. the factor m/p of Korthikanti et al."""
    for p_value in range(2, 9):
        for m_value in range(1, p_value + 3):
            n = in_flight(sp.Integer(0)).subs({p: p_value, vpp: 1, m: m_value})
            assert n == min(m_value, p_value)
