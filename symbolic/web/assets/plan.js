// The plan view: the configurations of a GPU count ranked as `mem4d plan` ranks them (search.js), computed in a Web
// Worker so the page never waits for it. The worker is made from the source of the same modules the page runs
// (estimate.js, steptime.js, search.js) and the data they read, so it works from file:// too, where a worker
// script cannot be loaded from a file. A newer request ends the one still running.
"use strict";
// (el, the element builder, is view.js's)

const TOP_ROWS = 10;  // plan's --top default (cli/plan.py TOP)
let planWorker = null, planTimer = null;

// a value as JavaScript source: functions as their own source text (Function.prototype.toString), data as JSON
function source(value) {
  if (typeof value === "function") return "(" + String(value) + ")";
  if (Array.isArray(value)) return "[" + value.map(source).join(",") + "]";
  if (value && typeof value === "object") {
    return "{" + Object.entries(value).map(([k, v]) => JSON.stringify(k) + ":" + source(v)).join(",") + "}";
  }
  return JSON.stringify(value === undefined ? null : value);
}

function workerSource(recipe, code) {
  return [
    "self.MEM4D = " + source({ site: MEM4D.site, rules: { [recipe]: MEM4D.rules[recipe] } }) + ";",
    "(" + String(MEM4D.estimateModule) + ")(MEM4D, self);",
    "(" + String(MEM4D.steptimeModule) + ")(MEM4D);",
    "(" + String(MEM4D.proxyModule) + ")(MEM4D);",
    "(" + String(MEM4D.searchModule) + ")(MEM4D);",
    "const CODE = " + source(code) + ";",
    "self.onmessage = (event) => self.postMessage(MEM4D.search(event.data, CODE));",
  ].join("\n");
}

// `mem4d plan`'s command line for the same inputs (--system only where plan ranks by the step-time model)
function planCommand(st, model, gpus, gbs, system) {
  const parts = ["mem4d plan"];
  if (st.model !== MEM4D.site.default_model) parts.push("--model " + MEM4D.word(model.spec));
  parts.push("--gpus " + gpus, "--seq " + st.s, "--gbs " + gbs);
  if (st.recipe !== MEM4D.site.options.recipe[0]) parts.push("--recipe " + st.recipe);
  parts.push("--zero " + st.zero);
  if (st.fp8 !== "none") parts.push("--fp8 " + st.fp8);
  if (st.gpu_mem !== MEM4D.site.options.gpu_mem[0]) parts.push("--gpu-mem " + st.gpu_mem);
  if (system !== MEM4D.site.hardware.default_system && MEM4D.rankBy(st, model) === "time") parts.push("--system " + system);
  return parts.join(" ");
}

// plan's figure of a row: the step-time model's tokens/s/GPU, or the proxy's score (T_c / T)
const SCORE = { time: ["tokens/s/GPU", (x) => Math.round(x).toLocaleString("en-US")],
  proxy: ["proxy score", (x) => x.toFixed(4)] };

function planRow(row, rank) {
  const offered = row.t_e === row.t && MEM4D.site.options.m.includes(row.m) && MEM4D.site.options.b.includes(row.b);
  const button = el("button", { type: "button", "aria-label": `show dp ${row.d} tp ${row.t} pp ${row.p} cp ${row.c} ` +
    `ep ${row.e} vpp ${row.vpp} mbs ${row.b}` }, "show");
  if (!offered) {
    button.disabled = true;
    button.title = "not a configuration the controls offer (etp 1, or its mbs or m): run mem4d estimate";
  }
  button.addEventListener("click", () => {
    for (const [id, v] of [["d", row.d], ["t", row.t], ["p", row.p], ["c", row.c], ["e", row.e], ["vpp", row.vpp],
      ["b", row.b], ["m", row.m]]) document.getElementById(id).value = String(v);
    document.getElementById("controls").dispatchEvent(new Event("change"));
  });
  const cells = [row.d, row.t, row.p, row.c, row.e, row.t_e, row.vpp, row.b, row.m, SCORE[rank][1](row.score),
    MEM4D.gib(row.peak)];
  return el("tr", { "data-score": String(row.score), "data-peak": String(row.peak),
    "data-config": [row.d, row.t, row.p, row.c, row.e, row.t_e, row.vpp, row.b].join(",") },
  ...cells.map((x) => el("td", { class: "num" }, x)), el("td", {}, button));
}

function showRows(answer) {
  const table = document.getElementById("plan");
  document.body.dataset.plan = "ready";
  if (answer.refusal) {
    document.getElementById("plan-count").textContent = "mem4d plan: error: " + answer.refusal;
    table.replaceChildren();
    return;
  }
  const head = ["dp", "tp", "pp", "cp", "ep", "etp", "vpp", "mbs", "m", SCORE[answer.rank][0], "peak GiB", ""]
    .map((h) => el("th", { class: "num" }, h));
  document.getElementById("plan-count").textContent = `${answer.fits} of ${answer.valid} valid configurations fit` +
    (answer.fits > TOP_ROWS ? ` (the ${TOP_ROWS} best shown)` : "") + (answer.rank === "proxy" ? "; ranked by plan's " +
    "proxy, as plan ranks this recipe or model (the step-time model states Megatron-LM's runs of attention models)" : "");
  table.replaceChildren(el("thead", {}, el("tr", {}, ...head)),
    el("tbody", {}, ...answer.top.map((row) => planRow(row, answer.rank))));
}

MEM4D.stopPlan = function () {
  if (planWorker) planWorker.terminate();
  clearTimeout(planTimer);
  planWorker = null;
  document.body.dataset.plan = "ready";
};

MEM4D.showPlan = function (st, model, code, gbs) {
  const gpus = Number(document.getElementById("gpus").value);
  const system = document.getElementById("system").value;
  document.getElementById("plan-cli").textContent = planCommand(st, model, gpus, gbs, system);
  MEM4D.stopPlan();
  document.body.dataset.plan = "computing";
  document.getElementById("plan-count").textContent = "computing…";
  planTimer = setTimeout(() => {  // a burst of changes starts one search, for the last of them
    const url = URL.createObjectURL(new Blob([workerSource(st.recipe, code)], { type: "text/javascript" }));
    const worker = planWorker = new Worker(url);
    worker.onmessage = (event) => {
      URL.revokeObjectURL(url);
      if (worker !== planWorker) return;
      worker.terminate();
      planWorker = null;
      showRows(event.data);
    };
    worker.onerror = (event) => showRows({ refusal: "the plan's worker failed: " + event.message });
    worker.postMessage({ st, model: st.model, gpus, gbs, system, top: TOP_ROWS,
      gpu_bytes: MEM4D.site.gpu_bytes[st.gpu_mem] });
  }, 80);
};
