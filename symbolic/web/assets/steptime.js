// A configuration's predicted tokens/s/GPU on a system, as `mem4d plan` ranks by it (symbolic/plan/ranking.py
// tokens_per_s): the step components printed from their sympy expressions (arch/<id>.js "time", web/timejs.py), the
// GEMM rates by size (time/gemm.py share), each group's bus bandwidth (time/links.py), the cards' and systems' figures
// (data.js hardware, read off time/cards.py and systems.py). Each operation in the order the numpy code does it, so
// the figure is plan's to the bit. A module: the plan view's Web Worker runs this same function.
"use strict";

MEM4D.steptimeModule = function (MEM4D) {
const GB = 1e9;  // time/links.py GB

// np.interp(x, xp, fp) within and beyond the table (numpy's compiled interp: slope (fp[j+1] - fp[j]) / (xp[j+1] - xp[j])
// times (x - xp[j]) plus fp[j]; a point of the table its value; the ends beyond it)
function interp(x, xp, fp) {
  const n = xp.length;
  if (x < xp[0]) return fp[0];
  if (x >= xp[n - 1]) return fp[n - 1];
  let j = 0;
  while (xp[j + 1] <= x) j++;
  if (xp[j] === x) return fp[j];
  return (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]) * (x - xp[j]) + fp[j];
}

// time/gemm.py share: the card's achieved GEMM rate at [m, k] x [k, n] over its best (an FP4 GEMM by the FP4 row)
function share(hw, card, m, n, k, precision) {
  const size = Math.cbrt(m * n * k);
  const family = hw.family[card] + (precision === "fp4" ? "-fp4" : "");
  return interp(Math.log2(Math.max(size, 1.0)), hw.log2_sizes, hw.curves[family]);
}

// time/evaluate.py precision_of and time/cast.py cast_bytes: NVFP4 runs the linear GEMMs in FP4, any other recipe in
// FP8; a cast reads the BF16 operand once per pass (FP8 1, NVFP4 with its Hadamard transform 2) and writes both usages
const blockCast = (element, passes) => 2 * passes + 2 * element;
const precisionOf = (fp8) => (fp8 === "none" ? "bf16" : fp8 === "nvfp4" ? "fp4" : "fp8");
const castBytes = (precision) =>
  precision === "bf16" ? 0.0 : precision === "fp4" ? blockCast(0.5 + 1 / 16, 2) : blockCast(1.0, 1);

const clip = (x, lo, hi) => Math.min(Math.max(x, lo), hi);

// time/flash.py share: causal attention's rate at a head width and the rank's keys over the cards' reference point
function attnShare(hw, headDim, seq) {
  const at = hw.attention, x = clip(Math.log2(seq), at.log2_seqs[0], at.log2_seqs[at.log2_seqs.length - 1]);
  const narrow = interp(x, at.log2_seqs, at.narrow), wide = interp(x, at.log2_seqs, at.wide);
  const wt = clip(Math.log2(Math.max(headDim, 1.0)) - 6.0, 0.0, 1.0);
  return Math.min((narrow + wt * (wide - narrow)) / at.reference, 1.0);
}

// time/links.py ring, all_to_all, point_to_point
function ring(sys, n, stride) {
  const g = clip(Math.floor(sys.domain / stride), 1, Math.max(n, 1));
  const k = Math.max(n / g, 1);
  const across = Math.min(sys.nvl_ring, sys.net_ring * (n - 1) / Math.max(k - 1, 1e-9));
  return GB * ((n * stride <= sys.domain) || (n <= 1) ? sys.nvl_ring : across);
}

function allToAll(sys, n, stride) {
  const g = clip(Math.floor(sys.domain / stride), 1, Math.max(n, 1));
  const perByte = Math.max((g - 1) / sys.nvl_a2a, (n - g) / sys.net_a2a) / Math.max(n, 1);
  return GB * (n > 1 ? (n - 1) / Math.max(n, 1) / Math.max(perByte, 1e-30) : sys.nvl_a2a);
}

const pointToPoint = (sys, span, stride) => GB * (span * stride <= sys.domain ? sys.nvl_ring : sys.net_ring);

// time/evaluate.py hardware_values with links.group_bandwidths; null with the card's refusal where it has no FP8
function hardware(hw, sys, shape, par, s, b, precision) {
  const card = hw.cards[sys.card_name];
  const peak = { fp8: card.fp8, fp4: card.fp4 }[precision] ?? card.bf16;
  if (!peak) return { refusal: `${card.label} has no ${precision.toUpperCase()} tensor cores: drop --fp8 for it` };
  const tokens = s * b / par.c;
  const dv = shape.d_v && !shape.kv_r ? shape.d_v : shape.dh;  // GQA values narrower than dh (MiMo-V2-Flash)
  const width = !shape.E ? shape.f : shape.a * shape.dh + shape.k * (shape.dh + dv);
  const best = ({ fp8: card.gemm_fp8, fp4: card.gemm_fp4 }[precision] ?? card.gemm_bf16) * hw.tera;
  const perExpert = shape.E ? tokens * shape.k_e * par.e * par.t_e / (par.t * shape.E) : tokens;
  const stage = par.d * par.t * par.c;
  return {
    R_g: best * share(hw, sys.card_name, tokens, width / par.t, shape.h, precision),
    R_e: best * share(hw, sys.card_name, perExpert, Math.max(shape.f_e, 1) / par.t_e, shape.h, precision),
    R_h: card.gemm_bf16 * hw.tera * share(hw, sys.card_name, tokens, shape.v / par.t, shape.h),
    R_f: card.gemm_bf16 / 2 * hw.tera * share(hw, sys.card_name, tokens, shape.h, Math.max(shape.E || 0, 1)),
    R_at: card.attn * hw.tera * attnShare(hw, shape.dh, s / par.c), W_hbm: card.hbm_rate * hw.tera, B_x: castBytes(precision),
    N_q: precision === "bf16" ? 0.0 : 1.0, N_n: precision === "fp4" ? 1.0 : 0.0,
    W_tp: ring(sys, par.t, 1), W_etp: ring(sys, par.t_e, 1), W_cp: ring(sys, par.c, par.t),
    W_ep: allToAll(sys, par.e, par.t_e), W_dp: ring(sys, par.d * par.c, par.t),
    W_edp: ring(sys, stage / (par.e * par.t_e), par.e * par.t_e), W_pp: pointToPoint(sys, par.p, par.t * par.c * par.d),
  };
}

// tokens/s/GPU of one row (plan.ranking.tokens_per_s): gbs s / (N T), T the components' sum in their order; or
// {refusal} where the card has no FP8
MEM4D.tokensPerS = function (row, model, code, systemName, recipe, fp8, s, gbs) {
  const hw = MEM4D.site.hardware, sys = hw.systems[systemName], shape = model.time.values;
  const par = { d: row.d, t: row.t, p: row.p, c: row.c, e: row.e, t_e: row.t_e };
  const rates = hardware(hw, sys, shape, par, s, row.b, precisionOf(fp8));
  if (rates.refusal) return rates;
  const L = model.inputs.L / row.p * row.p;  // L_w: the sliding-window layers' share of it, as plan.ranking
  const values = Object.assign({}, shape, { L, L_w: model.time.sliding_window_layers * L / model.inputs.L }, par,
    { vpp: row.vpp, b: row.b, m: row.m, s: s }, MEM4D.site.recipes[recipe].time_widths[fp8], rates);
  let step = 0;
  for (const [, names, fn] of code.time) step += fn(...names.map((name) => values[name]));
  return { score: gbs * s / (row.d * row.t * row.p * row.c * step) };
};
};

MEM4D.steptimeModule(MEM4D);
