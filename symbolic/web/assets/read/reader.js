// A config.json read in the page as `mem4d estimate --model FILE` reads it, for the model_types the page reads
// (readerdata.PAGE_FAMILIES): symbolic/config/hfconfig.py read_noted, hfkeys.py's Reader and key tables,
// families/{llama,qwen,mixtral,qwen_moe,olmoe,gpt2}.py's build functions, aliases.resolve and ModelShape.__post_init__'s
// checks, step by step in the same order, with the same one-line refusals; the key lists, what each refusal says
// mem4d models, the defaults and aliases are read off the Python objects (MEM4D.site.reader), only the predicates
// and builds are ported here. Then the model as the page reads it (web/data.py model_data: config/counts.py,
// architecture.py, rules.model_letters, web/timedata.py). tests/test_web_reader.py holds this equal to Python.
"use strict";

(function (root) {
  const J = root.PYJSON;
  const { Refusal, PyFloat, isInt, isReal, num, repr, dumps, eq } = J;
  const isStr = (x) => typeof x === "string";
  const isBool = (x) => typeof x === "boolean";
  const isObj = (x) => x instanceof Map;
  const finite = (x) => isReal(x) && Number.isFinite(num(x));
  const inAny = (x, values) => values.some((v) => eq(x, v));
  const count = (x, least = 1) => x === null || (isInt(x) && x >= least && x <= 2 ** 40);

  // hfkeys.py's predicates and the page families' `values` ones, by key (their supports: MEM4D.site.reader)
  const ONLY = {
    hidden_act: (x) => inAny(x, ["silu", "swish"]),
    attention_dropout: (x) => inAny(x, [0, null]) && !isBool(x),
    router_jitter_noise: (x) => inAny(x, [0, null]) && !isBool(x),
    clip_qkv: (x) => x === null,
    is_encoder_decoder: (x) => x === false || x === null,
    add_cross_attention: (x) => x === false || x === null,
    pruned_heads: (x) => x === null || (isObj(x) && x.size === 0),
    qkv_bias: (x) => x === false || x === null,
  };
  const ATTENTION_KINDS = ["full_attention", "sliding_attention"];
  const boolOrNull = (x) => x === null || isBool(x);
  const HARMLESS_VALUES = {
    layer_types: (x) => x === null || (Array.isArray(x) && x.every((k) => isStr(k) && ATTENTION_KINDS.includes(k))),
    use_sliding_window: boolOrNull, sliding_window: (x) => count(x), max_window_layers: (x) => count(x, 0),
    max_position_embeddings: (x) => count(x), pretraining_tp: (x) => count(x), rope_theta: isReal,
    rms_norm_eps: isReal, router_aux_loss_coef: (x) => x === null || isReal(x),
    initializer_range: (x) => x === null || isReal(x), rope_scaling: (x) => x === null || isObj(x),
    rope_parameters: (x) => x === null || isObj(x), initial_context_length: (x) => count(x),
    kv_cache_dtype: (x) => x === null || isStr(x), mamba_ssm_dtype: (x) => x === null || isStr(x),
    "transformers.js_config": (x) => x === null || isObj(x), use_cache: boolOrNull, output_router_logits: boolOrNull,
    norm_topk_prob: boolOrNull, use_mrope: boolOrNull, is_llama_config: boolOrNull, rope_interleaved: boolOrNull,
  };
  const VALUES = { tie_word_embeddings: isBool, attention_bias: isBool, mlp_bias: isBool };
  const QWEN3 = { use_qk_norm: (x) => inAny(x, [true, null]), attention_bias: isBool };
  const FAMILY_VALUES = {
    granite: { embedding_multiplier: isReal, residual_multiplier: isReal, attention_multiplier: isReal, logits_scaling: isReal },
    qwen3: QWEN3, qwen2_moe: { qkv_bias: isBool },
    qwen3_moe: { ...QWEN3, shared_expert_intermediate_size: (x) => inAny(x, [0, null]) },
    gpt2: { activation_function: (x) => inAny(x, ["gelu_new", "gelu", "gelu_pytorch_tanh", "gelu_fast"]),
      reorder_and_upcast_attn: (x) => x === false || x === null,
      ...Object.fromEntries(["attn_pdrop", "embd_pdrop", "resid_pdrop"].map((k) => [k, (x) => isReal(x) && num(x) >= 0 && num(x) < 1])) },
  };

  class Reader {  // hfkeys.Reader
    constructor(raw, path, defaults) { this.raw = raw; this.path = path; this.defaults = defaults || {}; }
    get(key, fallback = null) {
      const value = this.raw.has(key) ? this.raw.get(key) : key in this.defaults ? this.defaults[key] : null;
      return value === null ? fallback : value;
    }
    fail(key, why) {
      let value = dumps(this.raw.has(key) ? this.raw.get(key) : null);
      if (value.length > 40) value = { "{": "{...}", "[": "[...]" }[value[0]] || value.slice(0, 37) + "...";
      return new Refusal(`${this.path}: key ${repr(key)} = ${value}: ${why}`);
    }
    count(key, fallback = null, zero = false) {
      const value = this.get(key);
      if (value === null) {
        if (fallback === null) throw new Refusal(`${this.path}: missing key ${repr(key)} (and no library default for this family)`);
        return fallback;
      }
      if (!isInt(value) || !((zero ? 0 : 1) <= value && value <= 2 ** 40)) {
        throw this.fail(key, `must be a ${zero ? "non-negative" : "positive"} integer up to 2^40`);
      }
      return Number(value);
    }
    flag(key, fallback = false) {
      const value = this.get(key, fallback);
      if (!isBool(value)) throw this.fail(key, "must be true or false");
      return value;
    }
    layers(key, L) {
      let value = this.get(key);
      if (!J.truthy(value)) value = [];
      if (!Array.isArray(value) || value.some((i) => !isInt(i) || !(i >= 0 && i < L))) {
        throw this.fail(key, `must be a list of layer indices from 0 to L - 1 = ${L - 1}`);
      }
      return [...new Set(value.map(Number))].sort((x, y) => x - y);
    }
  }

  // families/*.py build functions of the page's model_types
  function qwenMoe(r, shared) {
    let key = "num_experts";
    if (r.raw.has("num_local_experts")) {
      const given = r.raw.has("num_experts") ? r.raw.get("num_experts") : null;
      if (!inAny(given, [null, r.raw.get("num_local_experts")])) throw r.fail("num_local_experts", `disagrees with num_experts = ${J.str(given)}`);
      key = "num_local_experts";
    }
    const E = r.count(key, 0, true);
    const L = r.count("num_hidden_layers");
    if (E === 0) return {};
    const step = r.count("decoder_sparse_step", 1);
    const only = new Set(r.layers("mlp_only_layers", L));
    const dense = [...Array(L).keys()].filter((i) => only.has(i) || (i + 1) % step);
    const out = { E, k_e: r.count("num_experts_per_tok"), f_e: r.count("moe_intermediate_size"), dense_layers: dense };
    if (shared) {
      const f_s = r.count("shared_expert_intermediate_size", 0, true);
      Object.assign(out, { f_s, shared_gate: f_s > 0 });
    }
    return out;
  }
  const llama = (r) => { const bias = r.flag("attention_bias"); return { qkv_bias: bias, o_bias: bias, mlp_bias: r.flag("mlp_bias") }; };
  const qwen3 = (r) => { const bias = r.flag("attention_bias"); return { qk_norm: "head", qkv_bias: bias, o_bias: bias }; };
  const BUILDS = {
    llama, granite: llama, mistral: () => ({}), qwen2: () => ({ qkv_bias: true }), qwen3,
    mixtral: (r) => ({ E: r.count("num_local_experts"), k_e: r.count("num_experts_per_tok"), f_e: r.count("intermediate_size") }),
    qwen2_moe: (r) => ({ qkv_bias: r.flag("qkv_bias", true), ...qwenMoe(r, true) }),
    qwen3_moe: (r) => ({ ...qwen3(r), ...qwenMoe(r, false) }),
    olmoe: (r) => {
      const bias = r.flag("attention_bias");
      return { E: r.count("num_experts"), k_e: r.count("num_experts_per_tok"), f_e: r.count("intermediate_size"), qk_norm: "full", qkv_bias: bias, o_bias: bias };
    },
    olmo2: (r) => { const bias = r.flag("attention_bias"); return { qk_norm: "full", qkv_bias: bias, o_bias: bias }; },
    gpt2: (r) => ({ mlp: "gelu", norm: "layer", positions: r.count("n_positions"), qkv_bias: true, o_bias: true,
      mlp_bias: true, dropout: ["attn_pdrop", "embd_pdrop", "resid_pdrop"].some((k) => num(r.get(k, 0)) > 0) }),
  };
  const LETTERS = {  // a family's base letters under other keys (gpt2.gpt2_letters)
    gpt2: (r) => {
      const h = r.count("n_embd");
      return { h, f: r.count("n_inner", 4 * h), a: r.count("n_head"), k: r.count("n_head"), L: r.count("n_layer"),
        v: r.count("vocab_size"), tied: r.flag("tie_word_embeddings", true), head_dim: null };
    },
  };

  const decode = (v) => v !== null && typeof v === "object" && "$float" in v ? new PyFloat(v.$float) : v;

  function outside(path, why, decl) {
    return { outside: `${path}: ${why}: this page reads model_type ${Object.keys(decl.families).join(", ")}; ` +
      `build a page that reads this file with: mem4d web --model ${path} -o site` };
  }

  function family(raw, r, decl) {  // hfconfig._family (text_config answered before: outside the page)
    if (!raw.has("model_type")) {
      throw new Refusal(`${r.path}: no 'model_type' key: mem4d reads a config by its architecture and does not guess one; add the model_type of its checkpoint (one of ${decl.supported})`);
    }
    const kind = raw.get("model_type");
    if (kind === null) {
      throw new Refusal(`${r.path}: no 'model_type' key: mem4d reads a config by its architecture and does not guess one; add the model_type of its checkpoint (one of ${decl.supported})`);
    }
    if (!isStr(kind)) throw r.fail("model_type", "must be a string naming the architecture");
    const known = decl.supported.split(", ");
    if (known.includes(kind) && !(kind in decl.families)) return null;
    for (const key of decl.mla_keys) {
      if (raw.has(key) && raw.get(key) !== null) {
        throw r.fail(key, `multi-head latent attention in a model_type ${repr(kind)} config is not modelled; mem4d reads it for model_type ${decl.mla_families.join(", ")}`);
      }
    }
    if (!known.includes(kind)) throw r.fail("model_type", `this architecture is not modelled; mem4d models model_type ${decl.supported}`);
    return kind;
  }

  function checkKeys(raw, kind, fam, r, decl) {  // hfconfig._check_keys
    const unknown = [];
    const about = `model_type ${repr(raw.has("model_type") ? raw.get("model_type") : "llama")} (${fam.about})`;
    for (const [key, value] of raw) {
      if (key === decl.storage) continue;
      let rule = null;
      if (fam.keys.includes(key)) {
        rule = key in fam.values ? [FAMILY_VALUES[kind][key], fam.values[key]] : key in decl.values ? [VALUES[key], decl.values[key]] : null;
      }
      rule = rule || (key in decl.only ? [ONLY[key], decl.only[key]] : key in decl.harmless_values ? [HARMLESS_VALUES[key], decl.harmless_values[key]] : null);
      if (rule && !rule[0](value)) throw r.fail(key, `not modelled; mem4d models ${rule[1]}`);
      if (!rule && !fam.keys.includes(key) && !decl.harmless.includes(key)) unknown.push(key);
    }
    if (unknown.length === 1) {
      throw r.fail(unknown[0], `not a key mem4d knows for ${about}: it may change what is allocated, so it is refused rather than ignored`);
    }
    if (unknown.length) {
      const shown = unknown.slice(0, 12).map(repr).join(", ") + (unknown.length > 12 ? ` and ${unknown.length - 12} more` : "");
      throw new Refusal(`${r.path}: ${unknown.length} keys mem4d does not know for ${about}: ${shown}; each may change what is allocated, so they are refused rather than ignored`);
    }
  }

  function resolve(raw, fam, path) {  // aliases.resolve
    const out = new Map(raw);
    for (const [alias, attribute] of Object.entries(fam.aliases)) {
      if (!out.has(alias) || fam.keys.includes(alias)) continue;
      if (out.has(attribute) && !eq(out.get(attribute), out.get(alias))) {
        throw new Refusal(`${path}: key ${repr(alias)} (transformers' alias of ${repr(attribute)}) disagrees with ${repr(attribute)}`);
      }
      const value = out.get(alias);
      out.delete(alias);
      out.set(attribute, value);
    }
    return out;
  }

  function name(raw, path) {  // hfconfig._name
    const stem = path.split("/").pop().replace(/\.[^.]*$/, "");
    for (const v of [raw.get("_name_or_path"), stem !== "config" ? stem : null, raw.get("model_type")]) {
      if (isStr(v) && v.trim()) return v.trim();
    }
    return stem;
  }

  function checkShape(sh) {  // ModelShape.__post_init__'s checks that the page families' fields can reach
    const m = `model ${repr(sh.name)}`;
    if (sh.head_dim === null) {
      if (sh.h % sh.a) throw new Refusal(`${m}: hidden size h=${sh.h} is not divisible by heads a=${sh.a}`);
      sh.head_dim = Math.floor(sh.h / sh.a);
    }
    if (sh.a % sh.k) throw new Refusal(`${m}: heads a=${sh.a} are not divisible by KV heads k=${sh.k}`);
    if (sh.E) {
      if (!(sh.k_e >= 1 && sh.k_e <= sh.E) || !sh.f_e) {
        throw new Refusal(`${m}: an MoE model needs 1 <= k_e <= E experts per token and an expert width f_e, got E=${sh.E}, k_e=${sh.k_e}, f_e=${sh.f_e}`);
      }
      if (sh.dense_layers.length === sh.L) throw new Refusal(`${m}: every layer is dense (dense_layers), so E=${sh.E} experts are never used: give E=0`);
      if (sh.mlp_bias) throw new Refusal(`${m}: MLP biases in an MoE model are not modelled`);
    }
    return sh;
  }

  // hfconfig.read_noted: {shape} (every ModelShape field), {outside: one line}, or a Refusal (the CLI's one line)
  function readConfig(bytes, path, decl) {
    const raw0 = J.load(bytes, path, decl.bounds);
    if (raw0.has(decl.storage)) return outside(path, "a quantization_config (how the checkpoint is stored) is read by the command", decl);
    if (raw0.has("text_config")) return outside(path, "a multimodal checkpoint (text_config) is read by the command", decl);
    let r = new Reader(raw0, path);
    const kind = family(raw0, r, decl);
    if (kind === null) return outside(path, `model_type ${repr(raw0.get("model_type"))} is read by the command`, decl);
    const fam = decl.families[kind];
    const raw = resolve(raw0, fam, path);
    r = new Reader(raw, path);
    checkKeys(raw, kind, fam, r, decl);
    r.defaults = Object.fromEntries(Object.entries(fam.defaults).map(([k, v]) => [k, decode(v)]));
    let v;
    if (LETTERS[kind]) v = LETTERS[kind](r);
    else {
      v = { h: r.count("hidden_size"), f: r.count("intermediate_size"), a: r.count("num_attention_heads") };
      Object.assign(v, { k: r.count("num_key_value_heads", v.a), L: r.count("num_hidden_layers"), v: r.count("vocab_size"),
        tied: r.flag("tie_word_embeddings"), head_dim: r.count("head_dim", 0) || null });
    }
    const shape = { ...JSON.parse(JSON.stringify(decl.shape_defaults)), name: name(raw0, path), ...v, ...BUILDS[kind](r) };
    return { shape: checkShape(shape) };
  }

  root.MEM4D_READER = { readConfig, BUILDS, LETTERS, ONLY, HARMLESS_VALUES, VALUES, FAMILY_VALUES };
})(typeof window !== "undefined" ? window : globalThis);
