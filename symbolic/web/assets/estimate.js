// One configuration's bytes, as symbolic/estimator/estimate.py computes them, from the generated functions of
// arch/<id>.js (the sympy expressions printed as JavaScript) and the rule table traced into data.js. A module: the
// plan view's Web Worker runs this same function (plan.js hands it its source).
"use strict";

MEM4D.estimateModule = function (MEM4D, scope) {

// Python's round(): halves to the even neighbour (estimate rounds each component so)
MEM4D.rint = function (x) {
  const f = Math.floor(x), d = x - f;
  return d > 0.5 ? f + 1 : d < 0.5 ? f : (f % 2 === 0 ? f : f + 1);
};

// a format spec of a rule's message (Python's format mini-language, the specs the rule table uses)
scope.fmt = function (value, spec) {
  return spec === "g" ? String(Number(value)) : String(value);
};

// what the rules read (config/rules.py letters): the controls' values and the model's letters; st.gbs and st.t_e
// where the plan view sets them (the controls: gbs from m, t_e = tp)
MEM4D.letters = function (st, model) {
  const gbs = st.gbs !== undefined ? st.gbs : st.m === 0 ? st.p * st.b * st.d : st.m * st.b * st.d;
  return Object.assign({}, model.letters, {
    d: st.d, t: st.t, p: st.p, c: st.c, vpp: st.vpp, s: st.s, b: st.b, gbs: gbs,
    m: Math.floor(gbs / (st.b * st.d)), e: st.e, t_e: st.t_e !== undefined ? st.t_e : st.t, recompute: st.recompute,
    zero: st.zero, fp8: st.fp8,
  });
};

// the first rule of the table a configuration breaks: {name, message}, or null
MEM4D.broken = function (x, recipe) {
  for (const rule of MEM4D.rules[recipe]) {
    if (!rule.holds(x)) return { name: rule.name, message: rule.message(x) };
  }
  return null;
};

MEM4D.stageOf = (rank, p) => p === 1 ? "only" : rank === 0 ? "first" : rank === p - 1 ? "last" : "middle";

// what an --fp8 recipe changes of the expressions' form (symbolic/web/data.py fp8_class)
MEM4D.fp8Class = (fp8) => fp8 === "none" ? "none" : fp8 === "rowwise" ? "rows" : "fp8";

// the ranks estimate lists: each stage kind's representative (first 0, middle 1, last p - 1, only 0), or every rank
// of a model whose layers are of several kinds (estimate.ranks_of)
MEM4D.ranks = function (p, every) {
  if (every) return Array.from({ length: p }, (_, r) => r);
  return p === 1 ? [0] : p === 2 ? [0, 1] : [0, 1, p - 1];
};

const STAGE_KINDS = ["Le_r", "Lg_r", "Lm_r", "Lo_r", "Ln_r", "Lw_r"];  // config.kinds.KINDS, STAGE_NAMES' order after m_r

// each rank's layers of each kind under even stages (Training.kind_layers): rank r holds the chunks j p + r of
// L / (p vpp) layers each, a kind's count in a chunk read off its prefix sums (0 for a kind no layer is of)
MEM4D.split = function (model, p, vpp) {
  const size = model.inputs.L / (p * vpp);
  return Array.from({ length: p }, (_, r) => Object.fromEntries(STAGE_KINDS.map((name) => {
    const sums = model.prefix[name];
    let n = 0;
    for (let j = 0; sums && j < vpp; j++) n += sums[(j * p + r + 1) * size] - sums[(j * p + r) * size];
    return [name, n];
  })));
};

function rounded(names, raw) {
  const out = {};
  let total = 0;
  names.forEach((name, i) => {
    if (name === "total") return;
    out[name] = MEM4D.rint(raw[i]);
    total += out[name];
  });
  out.total = total;
  return out;
}

// estimate(): the profile's breakdown, every listed stage's, the peak and the verdict (Estimate.as_json's figures)
MEM4D.evaluate = function (st, model, code, gpuBytes, threshold) {
  const x = MEM4D.letters(st, model);
  const recipe = MEM4D.site.recipes[st.recipe];
  const values = Object.assign({}, recipe.fixed, recipe.fp8[st.fp8], model.inputs,
    { d: st.d, t: st.t, p: st.p, c: st.c, vpp: st.vpp, s: st.s, b: st.b, m: x.m, e: st.e, t_e: x.t_e });
  const args = MEM4D.site.names.map((name) => values[name]);
  const bytes = rounded(code.components, code.main(...args));
  const split = MEM4D.split(model, st.p, st.vpp);
  const layers = model.inputs.L / st.p;
  const stages = MEM4D.ranks(st.p, model.mixed).map((rank) => {
    const kind = MEM4D.stageOf(rank, st.p);
    const inFlight = code.in_flight(...args, rank)[0];
    const fn = code.stages[kind];
    const raw = fn.fn(...args, layers, inFlight, ...STAGE_KINDS.map((name) => split[rank][name]));
    return { stage: kind, rank: rank, layers: layers, in_flight: inFlight, bytes: rounded(fn.outputs, raw) };
  });
  let loaded = stages[0];
  for (const stage of stages) if (stage.bytes.total > loaded.bytes.total) loaded = stage;
  const peak = Math.max(bytes.total, loaded.bytes.total);
  const peakFrom = peak === bytes.total ? "total" : loaded.stage;
  return { bytes: bytes, stages: stages, most_loaded_stage: loaded.stage, most_loaded_rank: loaded.rank,
    peak_bytes: peak, peak_from: peakFrom, gpu_mem_bytes: gpuBytes, threshold: threshold,
    fits: peak < threshold * gpuBytes, gbs: x.gbs, m: x.m, profile: MEM4D.site.recipes[st.recipe].profile };
};
};

MEM4D.estimateModule(MEM4D, self);
