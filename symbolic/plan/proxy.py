"""A transparent throughput proxy for ranking configurations (a PROXY, not a throughput prediction): alpha-beta
step time T of FORMULAS, score T_c / T; not modelled: overlap, kernel efficiency, the embedding's and LM head's share
of a stage's time, non-ring collectives."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..config.parallel import NO_ZERO, ZERO_GRADIENTS, ZERO_OPTIMIZER, Parallel
from ..config.training import Training
from ..config.training_checks import RECOMPUTE
from .enumerate import Cluster


@dataclass(frozen=True)
class Hardware:
    """Round, assumed hardware figures (H100-class node with 8 NVLink GPUs and one 400 Gb/s NIC per GPU)."""

    flops: float = 400e12  # sustained bf16 matmul FLOP/s per GPU (about 40 % of an H100's dense peak)
    intra_bw: float = 300e9  # bytes/s per GPU inside a node (NVLink, ring algorithm bandwidth)
    inter_bw: float = 40e9  # bytes/s per GPU across nodes (400 Gb/s InfiniBand at about 80 %)
    intra_latency: float = 5e-6  # seconds per message (one ring step) inside a node
    inter_latency: float = 10e-6  # seconds per message across nodes
    gpus_per_node: int = 8


FORMULAS = [
    (
        "F_lin",
        "2 (2 h dh (a + k) + ((L - L_e) n_f h f + L_e (n_f d_x k_e C_f f_e + n_f h f_s + h E + 2 h d_l)) / L)",
        "forward FLOPs per token per layer in the Q, K, V, O matmuls and the MLP (n_f = 3 SwiGLU or 2 GeLU matrices; "
        "an MoE layer: k_e experts of width d_x (h, or a latent MoE's d_l), C_f times as many on the most loaded expert "
        "rank, the shared experts, the router, a latent MoE's projections), averaged over the layers",
    ),
    (
        "F_att",
        "2 s a dh",
        "forward FLOPs per token per layer in causal attention (QK^T and AV over s/2 keys on average)",
    ),
    ("T_c", "3 gbs s (L (F_lin + F_att) + 2 h v) / (N flops)", "ideal compute time per step (forward + 2x backward)"),
    (
        "F_up",
        "2 a (q_r (dh + d_r) + kv_r (dh + d_v))",
        "forward FLOPs per token per layer of MLA's up-projections (q_r = 0: no query up-projection)",
    ),
    (
        "T_r",
        "gbs s L F_r / (N flops); F_r = F_lin + F_att [full]; F_att [core_attn] + F_up [mla_up_proj] "
        "[selective]; (F_lin + F_att) floor(max_r L_r / n_ac) / max_r L_r [--ac-every n_ac]",
        "recompute: full reruns every layer's forward, selective the modules it names (layernorm and moe_act rerun no "
        "matmul: 0 here), torchtitan's --ac-every every n_ac-th block of the most loaded stage",
    ),
    (
        "bubble",
        "(p - 1) / (vpp m + p - 1)",
        "idle share of the 1F1B / interleaved schedule; T stretches by 1/(1 - bubble)",
    ),
    (
        "skew",
        "p max_r L_r / L",
        "the pipeline runs at its slowest stage's pace: its layers over the average (1 with an even split)",
    ),
    (
        "V_tp",
        "(8 + 4 [full]) (t - 1)/t (s b h / c) B_a (L/p) m",
        "TP+SP all-gathers and reduce-scatters: 4 per layer forward, 4 backward, 4 more when full recompute",
    ),
    (
        "V_cp",
        "(3 + [full]) (c - 1) 2 (s/c) b h (k/a) / t B_a (L/p) m",
        "ring attention passes K and V once forward and K, V plus their gradients backward",
    ),
    (
        "V_dp",
        "((n - 1)/n P_d/(t p) + (n_e - 1)/n_e P_e/(e t_e p)) (2 B_g [zero 0] | B_g + B_w [zero 1] | m B_g + B_w "
        "[zero 2] | m (B_g + 2 B_w) [zero 3]), n = d c, n_e = d t c/(e t_e)",
        "gradient all-reduce; reduce-scatter + "
        "parameter all-gather (distributed optimizer); ZeRO-2 reduce-scatters every micro batch's gradients (no "
        "unsharded accumulator); ZeRO-3 also all-gathers the weights for every micro batch's forward and backward; "
        "the routed experts' P_e parameters over their expert data-parallel group, the rest P_d over d c",
    ),
    ("V_pp", "2 (s b h / (t c)) B_a vpp m [p > 1]", "activations forward and their gradients backward between stages"),
    (
        "V_ep",
        "(4 + 2 [full]) (e - 1)/e C_f k_e (s b / (t c)) h B_a (L_e/p) m",
        "MoE all-to-all: dispatch and combine of each token's k_e copies, forward and backward (and the forward again "
        "under full recompute)",
    ),
    (
        "V_etp",
        "(4 + 2 [full]) (t_e - 1) C_f k_e (s b / (t c)) h B_a (L_e/p) m",
        "expert tensor parallel: the received rows all-gathered over t_e and reduce-scattered back",
    ),
    (
        "M_x",
        "tp: (8 + 4 [full]) (t - 1) (L/p) m; cp: (3 + [full]) (c - 1) (L/p) m; dp: 2 (n - 1) [zero <= 1], "
        "(m L/p + 1)(n - 1) [zero 2], 3 m (L/p)(n - 1) [zero 3]; pp: 2 vpp m [p > 1]; ep, etp: (4 + 2 [full]) (n_x - 1) "
        "(L_e/p) m",
        "messages (ring steps, or all-to-all peers) per step, each paying a fixed latency; ZeRO-2/3 "
        "collectives run layer by layer",
    ),
    (
        "T_x",
        "M_x latency + V_x / bw, intra-node figures if stride_x n_x <= gpus_per_node else inter-node",
        "rank order tp-cp-dp-pp: a group of n_x ranks at stride_x (tp: t at 1, cp: c at t, dp: d c at t, pp: p at t c "
        "d); experts tp-ep-dp (Megatron-Core): etp: t_e at 1, ep: e at t_e",
    ),
    ("T", "skew (T_c + T_r) / (1 - bubble) + T_tp + T_cp + T_dp + T_pp + T_ep + T_etp", "proxy step time, no overlap"),
    ("score", "T_c / T", "share of the step spent on the model's FLOPs; higher ranks first"),
]


GROUPS = ("tp", "cp", "dp", "pp", "ep", "etp")  # the collectives' groups, in the order terms lists their V, M and T
# terms' entries returned as computed (the others broadcast to T's shape: a term that is the same on every row)
UNBROADCAST = ("T_r", "bubble", "V_tp", "V_cp", "V_dp", "V_pp", "M_tp", "M_cp", "M_pp", "T_tp", "T_cp", "T_dp", "T_pp")


def terms(
    cluster: Cluster, grid: dict[str, np.ndarray], hw: Hardware = Hardware(), policies: tuple = ()
) -> dict[str, np.ndarray]:
    """Every FORMULAS term for arrays d, t, p, c, vpp, b, m, recompute (index into RECOMPUTE), zero (ZeRO stage) and
    max_layers (the largest stage's layers; L/p when absent); with `policies` (plan.policies.Policy) and a "policy"
    column indexing them, selective recompute's time is its modules' or --ac-every's (else core attention's)."""
    x = cluster.shape
    s = float(cluster.s)
    widths = Training()  # default byte widths, the same ones the memory estimate uses
    B_a, B_g, B_w = widths.act_bytes, widths.grad_bytes, widths.weight_bytes
    d, t, p, c, vpp, b, m = (np.asarray(grid[n], dtype=np.float64) for n in ("d", "t", "p", "c", "vpp", "b", "m"))
    e = np.asarray(grid.get("e", 1), dtype=np.float64)
    t_e = np.asarray(grid.get("t_e", t), dtype=np.float64)
    C_f = cluster.moe_capacity
    full = np.asarray(grid["recompute"]) == RECOMPUTE.index("full")
    selective = np.asarray(grid["recompute"]) == RECOMPUTE.index("selective")
    zero = np.asarray(grid["zero"])
    skew = p * np.asarray(grid.get("max_layers", x.L / p), dtype=np.float64) / x.L

    T_c, T_r = _compute_times(cluster, grid, hw, policies, full, selective, p)
    bubble = (p - 1) / (vpp * m + p - 1)
    V_tp = (8 + 4 * full) * (t - 1) / t * (s * b * x.h / c) * B_a * (x.L / p) * m
    V_cp = (3 + full) * (c - 1) * 2 * (s / c) * b * x.k * x.dh / t * B_a * (x.L / p) * m
    groups = Parallel(d, t, p, c, e, t_e)
    n_dp, n_edp = groups.zero_group, groups.edp
    per_step = np.select(
        [zero == NO_ZERO, zero == ZERO_OPTIMIZER, zero == ZERO_GRADIENTS],
        [2 * B_g, B_g + B_w, m * B_g + B_w],
        m * (B_g + 2 * B_w),
    )
    experts = x.L_e * x.E * x.expert_count  # routed-expert parameters (config.counts: SwiGLU or 2-matrix, h or d_l)
    V_dp = (
        (n_dp - 1) / n_dp * (x.param_count - experts) / (t * p) + (n_edp - 1) / n_edp * experts / (e * t_e * p)
    ) * per_step
    V_pp = np.where(p > 1, 2 * (s * b * x.h / (t * c)) * B_a * vpp * m, 0.0)
    dispatched = (4 + 2 * full) * C_f * x.k_e * (s * b / (t * c)) * x.h * B_a * (x.L_e / p) * m
    V_ep, V_etp = (e - 1) / e * dispatched, (t_e - 1) * dispatched

    M_tp = (8 + 4 * full) * (t - 1) * (x.L / p) * m
    M_cp = (3 + full) * (c - 1) * (x.L / p) * m
    M_dp = (n_dp - 1) * np.select(
        [zero <= ZERO_OPTIMIZER, zero == ZERO_GRADIENTS], [2, m * x.L / p + 1], 3 * m * x.L / p
    )
    M_pp = np.where(p > 1, 2 * vpp * m, 0.0)
    M_ep, M_etp = ((4 + 2 * full) * (n - 1) * (x.L_e / p) * m for n in (e, t_e))

    # each group's volume, messages and (stride, size) of FORMULAS' T_x, in GROUPS' order
    V = dict(zip(GROUPS, (V_tp, V_cp, V_dp, V_pp, V_ep, V_etp)))
    M = dict(zip(GROUPS, (M_tp, M_cp, M_dp, M_pp, M_ep, M_etp)))
    ranks = dict(zip(GROUPS, ((1, t), (t, c), (t, n_dp), (groups.stage_ranks, p), (t_e, e), (1, t_e))))
    T_x = {g: _seconds(hw, M[g], V[g], *ranks[g]) for g in GROUPS}
    T = skew * (T_c + T_r) / (1 - bubble)
    for g in GROUPS:  # added left to right, as FORMULAS' T lists them
        T = T + T_x[g]
    out = {"T_c": T_c, "T_r": T_r, "bubble": bubble, "skew": skew}
    out |= {f"{letter}_{g}": x[g] for letter, x in (("V", V), ("M", M), ("T", T_x)) for g in GROUPS}
    out |= {"T": T, "score": T_c / T}
    return {name: x if name in UNBROADCAST else np.broadcast_to(x, T.shape) for name, x in out.items()}


def _compute_times(cluster: Cluster, grid: dict[str, np.ndarray], hw: Hardware, policies: tuple, full, selective, p):
    """T_c, the step's compute seconds on every GPU (its layers' linear and attention FLOPs and the head's), and T_r,
    recompute's (full: every layer's forward again; selective: core attention, or with `policies` each one's
    modules)."""
    x = cluster.shape
    s, gbs, n_gpu = float(cluster.s), float(cluster.gbs), float(cluster.gpus)
    C_f = cluster.moe_capacity
    width = x.moe_latent or x.h  # the experts' width in and out: h, or a latent MoE's d_l
    moe_mlp = (
        x.mlp_matrices * width * x.k_e * C_f * x.f_e + x.mlp_matrices * x.h * x.f_s + x.h * x.E + 2 * x.h * x.moe_latent
    )
    F_lin = 2.0 * (2 * x.h * x.dh * (x.a + x.k) + ((x.L - x.L_e) * x.mlp_matrices * x.h * x.f + x.L_e * moe_mlp) / x.L)
    F_att = 2.0 * s * x.a * x.dh
    T_c = 3 * gbs * s * (x.L * (F_lin + F_att) + 2 * x.h * x.v) / (n_gpu * hw.flops)
    F_r = np.where(full, F_lin + F_att, np.where(selective, F_att, 0.0))
    if policies and "policy" in grid:
        F_r = _selective_flops(
            x,
            policies,
            np.asarray(grid["policy"]),
            full,
            F_lin + F_att,
            F_att,
            np.asarray(grid.get("max_layers", x.L / p), dtype=np.float64),
        )
    T_r = gbs * s * x.L * F_r / (n_gpu * hw.flops)
    return T_c, T_r


def _seconds(hw: Hardware, messages, volume, stride, size):
    """A collective's seconds: its messages at the link's latency and its volume at its bandwidth, within a node
    where the group's ranks (stride apart) fit in one, else across nodes."""
    inside = stride * size <= hw.gpus_per_node
    return messages * np.where(inside, hw.intra_latency, hw.inter_latency) + volume / np.where(
        inside, hw.intra_bw, hw.inter_bw
    )


def _selective_flops(x, policies: tuple, policy: np.ndarray, full: np.ndarray, F_layer, F_att, widest: np.ndarray):
    """F_r of FORMULAS per row: each policy's recompute FLOPs per token per layer (full: the whole layer; selective:
    its modules', or under --ac-every the checkpointed share of the most loaded stage's blocks)."""
    F_up = 2.0 * x.a * (x.q_lora * (x.dh + x.rope_dim) + x.kv_lora * (x.dh + x.v_dim)) if x.mla else 0.0
    core = np.array([float("core_attn" in q.modules.split(",")) for q in policies])[policy]
    up = np.array([float("mla_up_proj" in q.modules.split(",")) for q in policies])[policy]
    every = np.array([q.ac_every or 0 for q in policies], dtype=np.float64)[policy]
    chosen = np.array([q.recompute == "selective" for q in policies])[policy]
    blocks = np.where(every > 0, np.floor(widest / np.where(every > 0, every, 1.0)) / widest, 0.0)
    per_module = np.where(every > 0, F_layer * blocks, core * F_att + up * F_up)
    return np.where(full, F_layer, np.where(chosen, per_module, 0.0))


def explain(hw: Hardware = Hardware()) -> str:
    """The proxy's formulas and assumed hardware, as text for `--explain`."""
    lines = ["Ranking proxy (a proxy for ordering configurations, not a throughput prediction):"]
    width = max(len(name) for name, _, _ in FORMULAS)
    for name, formula, meaning in FORMULAS:
        lines.append(f"  {name:<{width}} = {formula}")
        lines.append(f"  {'':<{width}}   {meaning}")
    lines.append(
        "  N = d t p c GPUs; P = parameter count (P_e of it routed experts, P_d the rest); B_a, B_g, B_w = "
        "activation, gradient, weight bytes; [x] is 1 when x holds, else 0"
    )
    lines.append("Assumed hardware: " + ", ".join(f"{fl.name}={getattr(hw, fl.name):g}" for fl in fields(hw)))
    lines.append(
        "Not modelled: compute/communication overlap, kernel efficiency of the micro batch size, "
        "the embedding's and LM head's share of a stage's time."
    )
    return "\n".join(lines)
