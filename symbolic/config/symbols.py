"""One positive sympy Symbol per letter of the glossary (glossary.py), importable by its name."""

import sympy as sp

from . import glossary

# plain names (lambdify keywords); every letter is positive but those that may be 0: the rank r (0 on the first
# stage), the shared experts' width f_s (none), the MoE latent width d_l (none), a stage's MoE layers Le_r (a stage of dense layers) and the letters
# of what a model may not have (learned positions, MLA, MTP, the sparse-attention indexer, Gated DeltaNet layers)
ZERO_OK = (
    "r",
    "f_s",
    "d_l",
    "Le_r",
    "s_p",
    "q_r",
    "kv_r",
    "d_r",
    "d_v",
    "n_mtp",
    "n_i",
    "d_i",
    "k_i",
    "L_g",
    "n_gk",
    "n_gv",
    "d_gk",
    "d_gv",
    "K_c",
    "L_m",
    "L_o",
    "L_n",
    "n_m",
    "d_m",
    "d_s",
    "g_m",
    "Lg_r",
    "Lm_r",
    "Lo_r",
    "Ln_r",
    "B_c",
    "L_w",
    "k_w",
    "Lw_r",
    "Lb_r",
    "Lbe_r",
    "P_v",
    "A_v",
    "n_v",
)
BY_NAME = {
    name: sp.Symbol(name, **({"nonnegative": True} if name in ZERO_OK else {"positive": True}))
    for name in glossary.MEANING
}

s, b, h, f, a, k, L, v, dh, s_p = (BY_NAME[name] for name in glossary.SHAPE)
E, k_e, f_e, f_s, L_e, C_f, d_l = (BY_NAME[name] for name in glossary.MOE)
q_r, kv_r, d_r, d_v, n_mtp, n_i, d_i, k_i = (BY_NAME[name] for name in glossary.MLA)
L_g, n_gk, n_gv, d_gk, d_gv, K_c, L_m, L_o, L_n, n_m, d_m, d_s, g_m = (BY_NAME[name] for name in glossary.HYBRID)
L_w, k_w = (BY_NAME[name] for name in glossary.SWA)
P_v, A_v, n_v = (BY_NAME[name] for name in glossary.VISION)
d, t, p, c, e, t_e = (BY_NAME[name] for name in glossary.PARALLEL)
m, vpp, n_ac = (BY_NAME[name] for name in glossary.SCHEDULE)
B_w, B_g, B_o, B_a, B_l, B_q, B_c = (BY_NAME[name] for name in glossary.BYTES)
r = BY_NAME["r"]  # the pipeline rank of a stage (r = 0 first, p - 1 last)
L_r, m_r, Le_r, Lg_r, Lm_r, Lo_r, Ln_r, Lw_r, Lb_r, Lbe_r = (
    BY_NAME[name] for name in glossary.STAGE_NAMES
)  # the stage's layers and in-flight micro batches
ALL = tuple(BY_NAME[name] for name in glossary.NAMES)  # the estimator's inputs

LATEX = {BY_NAME[name]: tex for name, tex in glossary.LATEX.items()}
MEANING = {BY_NAME[name]: meaning for name, meaning in glossary.MEANING.items()}
