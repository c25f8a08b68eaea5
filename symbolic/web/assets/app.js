// The controls: each offers the values the rule table allows beside the others; every change re-evaluates the
// estimate in the page (estimate.js) and shows it (view.js). The state lives in the URL's hash: a link shares it.
"use strict";

const SITE = MEM4D.site;
const NUMERIC = ["d", "t", "p", "c", "e", "vpp", "s", "b", "m", "zero"];
const TRAINING = ["recipe", "d", "t", "p", "c", "e", "vpp", "s", "b", "m", "recompute", "zero", "fp8"];
const FLAGS = { d: "--dp", t: "--tp", p: "--pp", c: "--cp", e: "--ep", vpp: "--vpp", s: "--seq", b: "--mbs",
  recompute: "--recompute", zero: "--zero", fp8: "--fp8" };
const LABEL = { m: (v) => v === 0 ? "pp (one full pipeline)" : String(v), s: (v) => String(v) };
const byName = Object.fromEntries(SITE.models.map((m) => [m.name, m]));

function select(id) { return document.getElementById(id); }

function fill() {
  select("model").replaceChildren(...SITE.models.map((m) => new Option(m.name, m.name)));
  select("model").value = byName[SITE.default_model] ? SITE.default_model : SITE.models[0].name;
  select("gpu_mem").replaceChildren(...SITE.options.gpu_mem.map((g) => new Option(g, g)));
  select("gpus").replaceChildren(...[8, 16, 32, 64, 128, 256, 512, 1024].map((n) => new Option(String(n), String(n))));
  select("gpus").value = "64";
  const hardware = SITE.hardware;
  select("system").replaceChildren(...Object.keys(hardware.systems).map((n) => new Option(n, n)));
  select("system").value = hardware.default_system;
  for (const name of TRAINING) {
    select(name).replaceChildren(...SITE.options[name].map((v) => new Option((LABEL[name] || String)(v), String(v))));
  }
}

function state() {
  const st = { model: select("model").value, gpu_mem: select("gpu_mem").value };
  for (const name of TRAINING) st[name] = NUMERIC.includes(name) ? Number(select(name).value) : select(name).value;
  return st;
}

function setState(st) {
  for (const [name, value] of Object.entries(st)) {
    const node = select(name);
    if (node && [...node.options].some((o) => o.value === String(value))) node.value = String(value);
  }
}

// an option is enabled where the configuration with it (the others as set) breaks no rule of the table
function offerValid(st) {
  const model = byName[st.model];
  for (const name of TRAINING) {
    for (const option of select(name).options) {
      const value = NUMERIC.includes(name) ? Number(option.value) : option.value;
      const trial = Object.assign({}, st, { [name]: value }, name === "recipe" ? SITE.recipes[value].defaults : {});
      option.disabled = value !== st[name] && MEM4D.broken(MEM4D.letters(trial, model), trial.recipe) !== null;
    }
  }
  for (const option of select("model").options) {
    const trial = Object.assign({}, st, { model: option.value });
    option.disabled = option.value !== st.model && MEM4D.broken(MEM4D.letters(trial, byName[option.value]), st.recipe) !== null;
  }
}

function cli(st, gbs) {
  const parts = ["mem4d estimate"];
  const defaults = SITE.recipes[st.recipe].defaults;
  if (st.model !== SITE.default_model) parts.push("--model " + MEM4D.word(byName[st.model].spec));
  if (st.recipe !== SITE.options.recipe[0]) parts.push("--recipe " + st.recipe);
  for (const [name, flag] of Object.entries(FLAGS)) {
    const given = name in defaults ? defaults[name] : SITE.options[name][0];
    if (String(st[name]) !== String(given)) parts.push(flag + " " + st[name]);
  }
  if (st.m !== 0) parts.push("--gbs " + gbs);
  if (st.gpu_mem !== SITE.options.gpu_mem[0]) parts.push("--gpu-mem " + st.gpu_mem);
  return parts.join(" ");
}

function load(arch, then) {
  if (MEM4D.arch[arch]) return then();
  const script = document.createElement("script");
  script.src = "arch/" + arch + ".js";
  script.onload = then;
  script.onerror = () => MEM4D.refuse("arch/" + arch + ".js did not load: rebuild the site with mem4d web");
  document.head.append(script);
}

// each change re-offers the values at once; the estimate is drawn once the changes of one task are made
let pending = null;

function update(event) {
  document.body.dataset.state = "loading";
  if (event && event.target.id === "recipe") setState(SITE.recipes[event.target.value].defaults);  // the CLI's defaults
  offerValid(state());
  clearTimeout(pending);
  pending = setTimeout(draw, 0);
}

function draw() {
  const st = state();
  const model = byName[st.model];
  history.replaceState(null, "", "#" + new URLSearchParams(st).toString());
  const x = MEM4D.letters(st, model);
  select("cli").textContent = cli(st, x.gbs);
  const problem = MEM4D.broken(x, st.recipe);
  if (problem) {
    MEM4D.refuse(problem.message);
    document.body.dataset.state = "ready";
    return;
  }
  load(model.arch, () => {
    const code = MEM4D.arch[model.arch][[st.recipe, st.recompute, st.zero, MEM4D.fp8Class(st.fp8)].join("-")];
    if (!code) {  // data.possible left it out: a rule on the model alone refuses it (never reached when it holds)
      MEM4D.refuse(`${st.model} under --recipe ${st.recipe} with --recompute ${st.recompute} --zero ${st.zero} --fp8 ${st.fp8} was not built`);
      document.body.dataset.state = "ready";
      return;
    }
    const result = MEM4D.evaluate(st, model, code, SITE.gpu_bytes[st.gpu_mem], SITE.threshold);
    MEM4D.show(result, code);
    MEM4D.showPlan(st, model, code, x.gbs);
    MEM4D.last = result;
    document.body.dataset.state = "ready";
  });
}

// a config.json pasted, chosen or dropped: read as the command reads it (reader.js), its model added to the choices,
// on the built code of the architecture its features equal (data.arch_text); a refusal is the command's line
function readModel(bytes, path) {
  if (!MEM4D.reader) return loadReader(() => readModel(bytes, path));
  const status = select("paste-status");
  const say = (line, bad) => { status.textContent = line; status.className = bad ? "refusal" : "note"; status.hidden = false; };
  let got;
  try {
    got = MEM4D_READER.readConfig(bytes, path, MEM4D.reader);
  } catch (err) {
    if (err instanceof PYJSON.Refusal) return say("mem4d estimate: error: " + err.message, true);
    throw err;
  }
  if (got.outside) return say(got.outside, true);
  const model = MEM4D_SHAPE.modelData(got.shape, path, MEM4D.reader);
  const arch = Object.keys(MEM4D.arch_features).find((id) => MEM4D.arch_features[id] === model.arch);
  if (!arch) {
    const built = [...new Set(SITE.models.filter((m) => !m.pasted).map((m) => m.arch))]
      .map((arch) => SITE.models.find((m) => m.arch === arch).name);  // the first model of each built architecture
    return say(`${path}: the architecture of ${model.name} has no code in this page (it has the code of ` +
      `${built.join(", ")} and the models alike): build a page for it with: ` +
      `mem4d web --model ${MEM4D.word(path)} -o site`, true);
  }
  Object.assign(model, { arch, pasted: true });
  if (!byName[model.name]) select("model").append(new Option(model.name, model.name));
  SITE.models = SITE.models.filter((m) => m.name !== model.name).concat([model]);
  byName[model.name] = model;
  select("model").value = model.name;
  say(`read ${path}: ${model.name}, ${model.param_count.toLocaleString("en-US")} parameters`, false);
  update();
}

// the reader's scripts and declarations (read/), loaded on the first file: the page opens without them
function loadReader(then) {
  const names = ["pyjson.js", "reader.js", "shape.js", "site.js"];
  const next = () => {
    if (!names.length) return then();
    const script = document.createElement("script");
    script.src = "read/" + names.shift();
    script.onload = next;
    script.onerror = () => { select("paste-status").textContent = script.src + " did not load: rebuild the site with mem4d web"; select("paste-status").hidden = false; };
    document.head.append(script);
  };
  next();
}

function readFile(file) {  // read to the reader's bound and a byte beyond, as hfconfig._load reads
  if (!file) return;
  if (!MEM4D.reader) return loadReader(() => readFile(file));
  file.slice(0, MEM4D.reader.bounds.max_bytes + 1).arrayBuffer().then((b) => readModel(new Uint8Array(b), file.name));
}

function listenForConfigs() {
  const box = select("config-drop");
  select("paste-read").addEventListener("click", () => readModel(new TextEncoder().encode(select("paste").value), "config.json"));
  select("paste-file").addEventListener("change", (event) => readFile(event.target.files[0]));
  box.addEventListener("dragover", (event) => { event.preventDefault(); box.open = true; box.classList.add("over"); });
  box.addEventListener("dragleave", () => box.classList.remove("over"));
  box.addEventListener("drop", (event) => {
    event.preventDefault();
    box.classList.remove("over");
    const file = event.dataTransfer.files[0];
    if (file) return readFile(file);
    select("paste").value = event.dataTransfer.getData("text");
    readModel(new TextEncoder().encode(select("paste").value), "config.json");
  });
}

fill();
listenForConfigs();
setState(Object.fromEntries(new URLSearchParams(location.hash.slice(1))));
select("scope").textContent = SITE.scope;
select("controls").addEventListener("change", update);
select("gpus").addEventListener("change", update);
select("system").addEventListener("change", update);
offerValid(state());
draw();  // at once: the page's load waits for the architecture's script, so --dump-dom shows the verdict
