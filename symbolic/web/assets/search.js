// The plan view's search, run in a Web Worker (plan.js): what `mem4d plan` enumerates and ranks (symbolic/plan/
// enumerate.py, search.py, ranking.py) with the recompute choice, ZeRO stage and FP8 the controls hold and even
// pipeline stages: every (dp, tp, pp, cp) of the GPU count, with experts every ep in divisors(E) and etp in {1, tp}
// that divides the stage, vpp in divisors(L), mbs in divisors(gbs), in plan's row order; those the rule table allows
// (the traced rules, as the controls use them) and that fit (estimate's verdict on the same peak), ranked as plan's
// default --rank-by ranks (the step-time model's predicted tokens/s/GPU where it states the run, else the proxy's
// score), ties by lower peak, then row order. A module: plan.js gives the worker its source.
"use strict";

MEM4D.searchModule = function (MEM4D) {
function divisors(n) {
  const out = [];
  for (let i = 1; i <= n; i++) if (n % i === 0) out.push(i);
  return out;
}

// enumerate.py factorisations then experts: (d, t, p) ascending, c = N / (d t p); each with (e, t_e)
function layouts(gpus, E) {
  const divs = divisors(gpus), out = [];
  for (const d of divs) for (const t of divs) {
    if (gpus % (d * t)) continue;
    for (const p of divs) {
      if (gpus % (d * t * p)) continue;
      const c = gpus / (d * t * p);
      if (!E) { out.push({ d, t, p, c, e: 1, t_e: t }); continue; }
      for (const e of divisors(E)) for (const same of [false, true]) {
        const t_e = same ? t : 1;
        if ((d * t * c) % (e * t_e) === 0 && !(same && t === 1)) out.push({ d, t, p, c, e, t_e });
      }
    }
  }
  return out;
}

const allowed = (x, rules) => rules.every((rule) => rule.holds(x));

// plan's default --rank-by (cli/plan.py _ranker): "time" for Megatron's paper profile on a model the step-time model
// states, else "proxy"
MEM4D.rankBy = (st, model) => MEM4D.site.recipes[st.recipe].profile === "paper" && !model.time.refusal ? "time" : "proxy";

// req: {st (the controls), model (its name), gpus, gbs, system, gpu_bytes}; code: the combination's functions
MEM4D.search = function (req, code) {
  const site = MEM4D.site, model = site.models.find((m) => m.name === req.model), st = req.st;
  const rules = MEM4D.rules[st.recipe], L = model.inputs.L, rows = [], rank = MEM4D.rankBy(st, model);
  let valid = 0;
  for (const layout of layouts(req.gpus, model.inputs.E)) {
    for (const vpp of divisors(L)) {
      if (L % (layout.p * vpp)) continue;  // even stages only
      for (const b of divisors(req.gbs)) {
        const trial = Object.assign({}, st, layout, { vpp, b, gbs: req.gbs });
        if (!allowed(MEM4D.letters(trial, model), rules)) continue;
        const row = valid++;
        const result = MEM4D.evaluate(trial, model, code, req.gpu_bytes, site.threshold);
        if (!result.fits) continue;
        const at = Object.assign({ vpp, b, m: result.m }, layout);
        const time = rank === "time" ? MEM4D.tokensPerS(at, model, code, req.system, st.recipe, st.fp8, st.s, req.gbs)
          : { score: MEM4D.proxyScore(at, model.proxy, st.zero, st.recompute, st.s, req.gbs, req.gpus) };
        if (time.refusal) return { refusal: time.refusal };
        rows.push(Object.assign({ peak: result.peak_bytes, score: time.score, row }, at));
      }
    }
  }
  rows.sort((x, y) => y.score - x.score || x.peak - y.peak || x.row - y.row);
  return { valid, fits: rows.length, top: rows.slice(0, req.top), rank };
};
};

MEM4D.searchModule(MEM4D);
