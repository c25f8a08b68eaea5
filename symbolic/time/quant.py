"""T_ncast: NVFP4's norm-output casts as a step-time component, priced with time/cast.py's bytes an element."""

from __future__ import annotations

import sympy as sp

from ..components.base import Component
from ..config.symbols import L, h, p
from .choices import Choices
from .symbols import B_x, N_n, W_hbm


def norm_casts(ch: Choices, tok: sp.Expr, full: sp.Expr, dense: sp.Expr) -> Component:
    """T_ncast: under NVFP4 the input and pre-MLP norms' outputs cast by a kernel of their own (TE v2.18 csrc/
    extensions/normalization.cpp rmsnorm_fwd: Impl::UNFUSED for an NVFP4 quantizer with RHT and post-RHT amax)."""
    layers = 0 if ch.mla else L / p  # the QKV projection's input; MLA's down projections are T_cast's already
    return Component(
        "T_ncast",
        N_n * tok * B_x / W_hbm * h * (layers + dense) * (1 + full),
        "under NVFP4, the norm writes its BF16 output and NVFP4Quantizer::quantize casts it (TE v2.18 and "
        "2.20.0.dev0 pytorch/csrc/extensions/normalization.cpp: only FP8 delayed scaling, cuDNN's MXFP8 and FP8 "
        "current scaling fuse the cast into the norm, NVFP4 with RHT takes Impl::UNFUSED): the QKV projection's "
        "[h] input every layer and fc1's [h] input in dense layers (the MoE layers' go to T_mexp), B_x bytes an "
        "element, rerun by full recompute",
    )
