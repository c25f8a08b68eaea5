// A small plan: every split of a GPU count over dp, tp, pp, cp (and ep) with the other settings as chosen, those the
// rule table allows and that fit, lowest peak first; computed in the page (a few hundred estimates: milliseconds).
// Not `mem4d plan`'s ranking, which orders by the predicted step time: run it for that.
"use strict";
// (el, the element builder, is view.js's)

MEM4D.plan = function (st, model, code, gpus) {
  const o = MEM4D.site.options, rows = [];
  for (const d of o.d) for (const t of o.t) for (const p of o.p) for (const c of o.c) {
    if (d * t * p * c !== gpus) continue;
    for (const e of o.e) {
      const trial = Object.assign({}, st, { d, t, p, c, e });
      if (MEM4D.broken(MEM4D.letters(trial, model), st.recipe)) continue;
      const result = MEM4D.evaluate(trial, model, code, MEM4D.site.gpu_bytes[st.gpu_mem], MEM4D.site.threshold);
      if (result.fits) rows.push({ d, t, p, c, e, peak: result.peak_bytes });
    }
  }
  return rows.sort((x, y) => x.peak - y.peak || x.p - y.p || x.t - y.t || x.c - y.c || x.e - y.e);
};

MEM4D.showPlan = function (st, model, code) {
  const gpus = Number(document.getElementById("gpus").value);
  const rows = MEM4D.plan(st, model, code, gpus);
  const table = document.getElementById("plan");
  const head = ["dp", "tp", "pp", "cp", "ep", "peak GiB", ""].map((h) => el("th", { class: "num" }, h));
  const body = rows.slice(0, 10).map((row) => {
    const button = el("button", { type: "button",
      "aria-label": `show dp ${row.d} tp ${row.t} pp ${row.p} cp ${row.c} ep ${row.e}` }, "show");
    button.addEventListener("click", () => {
      for (const name of ["d", "t", "p", "c", "e"]) document.getElementById(name).value = String(row[name]);
      document.getElementById("controls").dispatchEvent(new Event("change"));
    });
    return el("tr", { "data-peak": String(row.peak), "data-config": [row.d, row.t, row.p, row.c, row.e].join(",") },
      ...["d", "t", "p", "c", "e"].map((name) => el("td", { class: "num" }, row[name])),
      el("td", { class: "num" }, MEM4D.gib(row.peak)), el("td", {}, button));
  });
  document.getElementById("plan-count").textContent = `${rows.length} of them fit` +
    (rows.length > 10 ? " (the 10 lowest peaks shown)" : "");
  table.replaceChildren(el("thead", {}, el("tr", {}, ...head)), el("tbody", {}, ...body));
};
