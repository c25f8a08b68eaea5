"""The step-time model's own letters (hardware rates and group bandwidths, seconds-valued terms), beside the glossary's."""

import sympy as sp

MEANING = {
    "R_g": "achieved FLOP/s of the linear layers' GEMMs, at their precision (bf16, fp8 with --fp8, fp4 with --fp8 nvfp4)",
    "R_e": "achieved FLOP/s of the routed experts' GEMMs, at their precision and per-expert token count",
    "R_f": "achieved FLOP/s of an FP32 GEMM Transformer Engine runs in TF32 (an FP32 router's backward)",
    "R_h": "achieved FLOP/s of a BF16 GEMM (the LM head, which Transformer Engine's FP8 leaves in BF16)",
    "R_at": "achieved FLOP/s of causal flash attention, forward and backward, counted as FlashAttention counts them",
    "W_hbm": "HBM bandwidth a memory-bound kernel reaches (the measured copy bandwidth where published), bytes/s",
    "B_x": "bytes an FP8 (or NVFP4) cast of a GEMM operand moves per element (read in BF16 once per pass, written "
    "row-wise and column-wise: FP8 4, NVFP4 5.125, time/cast.py) under --fp8, 0 without",
    "N_q": "1 when the routed experts' GEMMs run in FP8 or FP4 (Transformer Engine pads each local expert's rows to "
    "the quantization alignment by a copy), 0 without --fp8",
    "N_n": "1 when the norms' outputs are cast by a kernel of their own (NVFP4: TE normalization.cpp Impl::UNFUSED), "
    "0 otherwise",
    "W_tp": "bus bandwidth of the tensor-parallel group's collectives, bytes/s",
    "W_etp": "bus bandwidth of the expert tensor-parallel group's collectives, bytes/s",
    "W_cp": "bus bandwidth of the context-parallel ring, bytes/s",
    "W_ep": "bus bandwidth of the expert-parallel all-to-all, bytes/s",
    "W_dp": "bus bandwidth of the data-parallel (d c) group's reduce-scatter / all-gather, bytes/s",
    "W_edp": "bus bandwidth of the expert data-parallel group's reduce-scatter / all-gather, bytes/s",
    "W_pp": "bandwidth of a pipeline stage's point-to-point send, bytes/s",
    "P_d": "parameters outside the routed experts (embedding, attention, dense MLPs, shared experts, head)",
    "P_x": "parameters of the routed experts, all layers",
}
BY_NAME = {name: sp.Symbol(name, positive=True) for name in MEANING}
R_g, R_e, R_f, R_h, R_at, W_hbm = (BY_NAME[n] for n in ("R_g", "R_e", "R_f", "R_h", "R_at", "W_hbm"))
W_tp, W_etp, W_cp, W_ep, W_dp, W_edp, W_pp = (
    BY_NAME[n] for n in ("W_tp", "W_etp", "W_cp", "W_ep", "W_dp", "W_edp", "W_pp")
)
P_d = BY_NAME["P_d"]
B_x = sp.Symbol("B_x", nonnegative=True)
BY_NAME["B_x"] = B_x
P_x = sp.Symbol("P_x", nonnegative=True)
BY_NAME["P_x"] = P_x
N_q = sp.Symbol("N_q", nonnegative=True)
BY_NAME["N_q"] = N_q
N_n = sp.Symbol("N_n", nonnegative=True)
BY_NAME["N_n"] = N_n
# how LaTeX writes the letters sympy would misread ("hbm": a bold h)
LATEX = {
    name: (rf"{name[0]}_{{\mathrm{{{name[2:]}}}}}" if name == "W_hbm" else sp.latex(sym))
    for name, sym in BY_NAME.items()
}
