// What the page shows of one estimate: the verdict, a stacked bar per pipeline stage, the table of components.
"use strict";

const GIB = 2 ** 30;
const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
  "#bab0ac", "#1f77b4", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#d62728", "#2ca02c", "#9467bd", "#aec7e8",
  "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2"];

// a shell word: as it is, or single-quoted (a config.json's path with a space)
MEM4D.word = (s) => /^[\w@%+=:,.\/-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";

// Python's f"{x / GIB:,.2f}" (estimate's tables)
MEM4D.gib = (x) => (x / GIB).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value; else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

// every component a row: the profile's, then those only exact stages hold (nonzero), as estimate's table lists them
function rowNames(result) {
  const names = Object.keys(result.bytes).filter((n) => n !== "total");
  for (const stage of result.stages) {
    for (const [name, x] of Object.entries(stage.bytes)) if (!names.includes(name) && name !== "total" && x) names.push(name);
  }
  return names;
}

// why the peak is what it is, in estimate's words (cli/estimate.py _print_tables; even stages only)
function reason(result) {
  const profile = result.profile;
  if (result.peak_from === "total") return `the ${profile} profile's total (no exact stage holds more)`;
  return `the exact ${result.peak_from} stage, above the ${profile} profile's total of ${MEM4D.gib(result.bytes.total)} GiB` +
    (result.peak_from === "only" && profile === "paper" ? " (terms the closed form leaves out: its rows marked -)" : "");
}

MEM4D.showVerdict = function (result) {
  const node = document.getElementById("verdict");
  const peak = result.peak_bytes, gpu = result.gpu_mem_bytes;
  const limit = Math.trunc(result.threshold * gpu);
  node.replaceChildren(
    el("span", { class: result.fits ? "fits" : "nofit", id: "fits", "data-fits": String(result.fits) },
      result.fits ? "FITS" : "DOES NOT FIT"),
    ": peak ", el("span", { id: "peak", "data-bytes": String(peak) }, MEM4D.gib(peak)), " GiB of ", MEM4D.gib(gpu),
    " GiB per GPU = " + (100 * peak / gpu).toFixed(1) + " % (rule: < " + Math.round(100 * result.threshold) +
    " % = " + MEM4D.gib(limit) + " GiB); the peak is ", el("span", { id: "peak-from" }, reason(result)),
    ". Most loaded stage (exact placement): ", el("span", { id: "most-loaded" }, result.most_loaded_stage), ".");
};

MEM4D.showBars = function (result, names) {
  const figure = document.getElementById("bars");
  const scale = Math.max(result.gpu_mem_bytes, ...result.stages.map((s) => s.bytes.total));
  const pct = (x) => (100 * x / scale).toFixed(3) + "%";
  const bars = result.stages.map((stage) => {
    const track = el("div", { class: "track", role: "img",
      "aria-label": `${stage.stage} stage: ${MEM4D.gib(stage.bytes.total)} GiB` });
    names.forEach((name, i) => {
      const x = stage.bytes[name] || 0;
      if (x > 0) track.append(el("span", { style: `width:${pct(x)};background:${PALETTE[i % PALETTE.length]}`,
        title: `${name}: ${MEM4D.gib(x)} GiB` }));
    });
    track.append(el("span", { class: "limit", style: `left:${pct(result.threshold * result.gpu_mem_bytes)}`,
      title: `${Math.round(100 * result.threshold)} % of the GPU` }));
    track.append(el("span", { class: "gpu", style: `left:${pct(result.gpu_mem_bytes)}`, title: "GPU memory" }));
    return el("div", { class: "bar" }, `${stage.stage} (rank ${stage.rank})`, track, `${MEM4D.gib(stage.bytes.total)} GiB`);
  });
  const legend = el("div", { class: "legend" }, ...names.map((name, i) =>
    el("span", {}, el("i", { style: `background:${PALETTE[i % PALETTE.length]}` }), name)),
  el("span", {}, "dashed: " + Math.round(100 * result.threshold) + " % line; solid: the GPU's memory"));
  figure.replaceChildren(el("figcaption", {}, "GiB per GPU by pipeline stage"), ...bars, legend);
};

const TEX = new Map();  // latex -> KaTeX's HTML (rendered once)

function formulaCell(latex) {
  const cell = el("dd", { class: "tex" });
  if (!latex) return cell;
  if (window.katex) {
    if (!TEX.has(latex)) TEX.set(latex, window.katex.renderToString(latex, { throwOnError: false, output: "html", displayMode: true }));
    cell.innerHTML = TEX.get(latex);
  } else {
    cell.append(el("code", {}, latex));
  }
  return cell;
}

MEM4D.showTable = function (result, code, names) {
  const table = document.getElementById("components");
  const head = el("tr", {}, el("th", {}, "component"), el("th", { class: "num" }, "total GiB"),
    ...result.stages.map((s) => el("th", { class: "num" }, `${s.stage} (rank ${s.rank}) GiB`)));
  const row = (name) => el("tr", { class: name === "total" ? "total" : "", "data-name": name },
    el("td", {}, name, el("span", { class: "doc" }, code.docs[name] || "")),
    el("td", { class: "num", "data-stage": "total", "data-bytes": String(result.bytes[name] ?? "") },
      name in result.bytes ? MEM4D.gib(result.bytes[name]) : "-"),
    ...result.stages.map((s) => el("td", { class: "num", "data-stage": String(s.rank),
      "data-bytes": String(s.bytes[name] ?? 0) }, MEM4D.gib(s.bytes[name] ?? 0))));
  table.replaceChildren(el("thead", {}, head), el("tbody", {}, ...names.map(row), row("total")));
};

// the formulas of the switches' expressions (KaTeX; tex/<key>.js loaded when first shown, drawn again only when the
// switches change)
let shownFormulas = null;
MEM4D.showFormulas = function (code) {
  if (code === shownFormulas) return;
  shownFormulas = code;
  const list = document.getElementById("formulas");
  if (!code.tex) {
    list.replaceChildren(el("dd", {}, "(this site was built without these switches' formulas: mem4d web --formulas " +
      "all; mem4d formula --latex prints them)"));
    return;
  }
  const draw = () => {
    if (shownFormulas !== code) return;  // the switches changed while the script loaded
    list.replaceChildren(...MEM4D.tex[code.tex].flatMap((f) => [el("dt", {}, f.name,
      el("span", { class: "doc" }, code.docs[f.name] || "")), formulaCell(f.latex)]));
  };
  if (MEM4D.tex[code.tex]) return draw();
  const script = el("script", { src: "tex/" + code.tex + ".js" });
  script.onload = draw;
  document.head.append(script);
};

MEM4D.show = function (result, code) {
  document.getElementById("refusal").hidden = true;
  const names = rowNames(result);
  MEM4D.showVerdict(result);
  MEM4D.showBars(result, names);
  MEM4D.showTable(result, code, names);
  MEM4D.showFormulas(code);
};

MEM4D.refuse = function (line) {
  const node = document.getElementById("refusal");
  node.textContent = "mem4d estimate: error: " + line;
  node.hidden = false;
  document.getElementById("verdict").replaceChildren("This configuration is refused, as the command line refuses it:");
  document.getElementById("bars").replaceChildren();
  document.getElementById("components").replaceChildren();
  document.getElementById("formulas").replaceChildren();
  document.getElementById("plan").replaceChildren();
  document.getElementById("plan-count").textContent = "";
  document.getElementById("plan-cli").textContent = "";
  MEM4D.stopPlan();
  shownFormulas = null;
};
