// plan's throughput proxy (symbolic/plan/proxy.py terms: alpha-beta step time T, score T_c / T), what `mem4d plan`
// ranks by where the step-time model does not state the run (a recipe but Megatron's, a Gated DeltaNet, Mamba-2 or
// sparse-attention model): each term in the order the numpy code computes it, so the score is plan's to the bit. Its
// fixed figures (Hardware, Training's widths and capacity, the ZeRO stages) are data.js's proxy, read off the Python.
// A module: the plan view's Web Worker runs this same function.
"use strict";

MEM4D.proxyModule = function (MEM4D) {
// one row's score: row {d, t, p, c, e, t_e, vpp, b, m}; zero and recompute as the controls hold them (selective with
// its default modules: F_r is core attention's, as _selective_flops gives it without mla_up_proj or --ac-every)
MEM4D.proxyScore = function (row, x, zero, recompute, s, gbs, gpus) {
  const P = MEM4D.site.proxy, hw = P.hw, Z = P.zero, C_f = P.C_f, B_a = P.B_a, B_g = P.B_g, B_w = P.B_w;
  const { d, t, p, c, e, t_e, vpp, b, m } = row;
  const full = recompute === "full", selective = recompute === "selective";
  const skew = p * (x.L / p) / x.L;  // even stages: max_layers = L / p
  const width = x.moe_latent || x.h;  // plan/proxy.py: the experts' width in and out, h or a latent MoE's d_l
  const moeMlp = x.mlp_matrices * width * x.k_e * C_f * x.f_e + x.mlp_matrices * x.h * x.f_s + x.h * x.E
    + 2 * x.h * x.moe_latent;
  const F_lin = 2.0 * (2 * x.h * x.dh * (x.a + x.k) + ((x.L - x.L_e) * x.mlp_matrices * x.h * x.f + x.L_e * moeMlp) / x.L);
  const F_att = 2.0 * s * x.a * x.dh;
  const T_c = 3 * gbs * s * (x.L * (F_lin + F_att) + 2 * x.h * x.v) / (gpus * hw.flops);
  const F_r = full ? F_lin + F_att : selective ? F_att : 0.0;
  const T_r = gbs * s * x.L * F_r / (gpus * hw.flops);
  const bubble = (p - 1) / (vpp * m + p - 1);
  const V_tp = (8 + 4 * full) * (t - 1) / t * (s * b * x.h / c) * B_a * (x.L / p) * m;
  const V_cp = (3 + full) * (c - 1) * 2 * (s / c) * b * x.k * x.dh / t * B_a * (x.L / p) * m;
  const n_dp = d * c, stage = d * t * c, n_edp = stage / (e * t_e);
  const perStep = zero === Z.none ? 2 * B_g : zero === Z.optimizer ? B_g + B_w : zero === Z.gradients ?
    m * B_g + B_w : m * (B_g + 2 * B_w);
  const experts = x.L_e * x.E * x.expert_count;
  const V_dp = ((n_dp - 1) / n_dp * (x.param_count - experts) / (t * p)
    + (n_edp - 1) / n_edp * experts / (e * t_e * p)) * perStep;
  const V_pp = p > 1 ? 2 * (s * b * x.h / (t * c)) * B_a * vpp * m : 0.0;
  const dispatched = (4 + 2 * full) * C_f * x.k_e * (s * b / (t * c)) * x.h * B_a * (x.L_e / p) * m;
  const V_ep = (e - 1) / e * dispatched, V_etp = (t_e - 1) * dispatched;
  const M_tp = (8 + 4 * full) * (t - 1) * (x.L / p) * m;
  const M_cp = (3 + full) * (c - 1) * (x.L / p) * m;
  const M_dp = (n_dp - 1) * (zero <= Z.optimizer ? 2 : zero === Z.gradients ? m * x.L / p + 1 : 3 * m * x.L / p);
  const M_pp = p > 1 ? 2 * vpp * m : 0.0;
  const M_ep = (4 + 2 * full) * (e - 1) * (x.L_e / p) * m, M_etp = (4 + 2 * full) * (t_e - 1) * (x.L_e / p) * m;
  const seconds = (messages, volume, stride, size) => {
    const inside = stride * size <= hw.gpus_per_node;
    return messages * (inside ? hw.intra_latency : hw.inter_latency) + volume / (inside ? hw.intra_bw : hw.inter_bw);
  };
  const T_tp = seconds(M_tp, V_tp, 1, t), T_cp = seconds(M_cp, V_cp, t, c);
  const T_dp = seconds(M_dp, V_dp, t, n_dp), T_pp = seconds(M_pp, V_pp, stage, p);
  const T_etp = seconds(M_etp, V_etp, 1, t_e), T_ep = seconds(M_ep, V_ep, t_e, e);
  const T = skew * (T_c + T_r) / (1 - bubble) + T_tp + T_cp + T_dp + T_pp + T_ep + T_etp;
  return T_c / T;
};
};

MEM4D.proxyModule(MEM4D);
