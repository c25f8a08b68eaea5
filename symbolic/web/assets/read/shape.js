// A ModelShape's fields (reader.js) as the page reads a model: symbolic/web/data.py model_data, from the shape's
// properties (config/shapes.py), its parameter counts (config/counts.py), its Architecture's features
// (config/architecture.py, DERIVED), the rules' letters (config/rules.py model_letters), its layers of each kind
// (config/kinds.py, web/timedata.py layer_prefixes) and the plan view's letters (timedata.model_time, model_proxy),
// property by property; tests/test_web_reader.py holds it equal to Python's model_data over the published files.
"use strict";

(function (root) {
  function props(sh) {  // ModelShape's and ParameterCounts' properties
    const x = { ...sh, dh: sh.head_dim, mla: sh.kv_lora > 0, dsa: sh.index_heads > 0, moe: sh.E > 0,
      gdn: sh.linear_layers.length > 0, mamba: sh.mamba_layers.length > 0,
      blocks: sh.mixerless_layers.length > 0 || sh.mlpless_layers.length > 0 };
    Object.assign(x, { L_e: x.moe ? sh.L - sh.dense_layers.length : 0, L_g: sh.linear_layers.length,
      L_m: sh.mamba_layers.length, L_o: sh.mixerless_layers.length, L_n: sh.mlpless_layers.length,
      L_w: sh.swa_layers.length, mlp_matrices: sh.mlp === "swiglu" ? 3 : 2, P_v: 0, A_v: 0 });
    const h = sh.h, a = sh.a, dh = x.dh;
    x.is_moe_layer = (i) => x.moe && !sh.dense_layers.includes(i);
    x.mtp_moe = x.is_moe_layer(sh.L - 1);
    x.mtp_modules = sh.mtp && sh.mtp_repeated ? 1 : sh.mtp;
    x.norm_count = h * (sh.norm === "rms" ? 1 : 2);
    const gqa = (k, sinks) => {
      const dv = sh.v_dim || dh;
      const bias = (sh.qkv_bias ? a * dh + k * dh + k * dv : 0) + (sh.o_bias ? h : 0);
      const norm = { none: 0, head: 2 * dh, full: a * dh + k * dh, weightless: 0 }[sh.qk_norm];
      const gate = sh.attn_gate ? h * a * dh + (sh.qkv_bias ? a * dh : 0) : 0;
      return h * a * dh + h * k * dh + h * k * dv + a * dv * h + bias + norm + (sinks ? a : 0) + gate;
    };
    const indexer = x.dsa ? sh.q_lora * sh.index_heads * sh.index_dim + h * sh.index_dim + 2 * sh.index_dim + h * sh.index_heads : 0;
    if (x.mla) {
      const qk = dh + sh.rope_dim, q_r = sh.q_lora;
      const q = q_r ? h * q_r + q_r + q_r * a * qk : h * a * qk;
      x.attention_count = q + h * (sh.kv_lora + sh.rope_dim) + sh.kv_lora + sh.kv_lora * a * (dh + sh.v_dim) + a * sh.v_dim * h + indexer;
    } else x.attention_count = gqa(sh.k, sh.sinks);
    x.swa_attention_count = sh.swa_layers.length ? gqa(sh.swa_k, sh.swa_sinks) : 0;
    const qk = sh.lin_k_heads * sh.lin_k_dim, vd = sh.lin_v_heads * sh.lin_v_dim, hv = sh.lin_v_heads;
    x.gdn_count = x.gdn ? h * (2 * qk + 2 * vd + 2 * hv) + (2 * qk + vd) * sh.conv_width + 2 * hv + sh.lin_v_dim + vd * h : 0;
    const inner = sh.ssm_heads * sh.ssm_head_dim, conv = inner + 2 * sh.ssm_groups * sh.ssm_state;
    x.mamba_count = x.mamba ? h * (inner + conv + sh.ssm_heads) + conv * (sh.conv_width + (sh.ssm_conv_bias ? 1 : 0)) + 3 * sh.ssm_heads + inner + inner * h : 0;
    x.dense_mlp_count = x.mlp_matrices * h * sh.f + (sh.mlp_bias ? (x.mlp_matrices - 1) * sh.f + h : 0);
    const n = sh.mlp === "swiglu" ? 2 : 1, w = sh.moe_latent || h;
    x.expert_count = (n + 1) * w * sh.f_e + (sh.moe_bias ? n * sh.f_e + h : 0);
    x.moe_mlp_count = h * sh.E + sh.E * x.expert_count + x.mlp_matrices * h * sh.f_s + (sh.shared_gate ? h : 0) +
      (sh.expert_bias ? sh.E : 0) + (sh.moe_bias ? sh.E : 0) + 2 * h * sh.moe_latent;
    x.mtp_count = 3 * x.norm_count + 2 * h * h + x.attention_count + 2 * x.norm_count + (x.mtp_moe ? x.moe_mlp_count : x.dense_mlp_count);
    const L = sh.L, v = sh.v;
    const mlps = x.L_e * x.moe_mlp_count + (L - x.L_e - x.L_n) * x.dense_mlp_count;
    const norms = L * (sh.sandwich ? 4 : 2) - x.L_o - x.L_n;
    const mixers = (L - x.L_g - x.L_m - x.L_o - x.L_w) * x.attention_count + x.L_g * x.gdn_count + x.L_m * x.mamba_count + x.L_w * x.swa_attention_count;
    const head = (sh.tied ? 0 : h * v) + (sh.head_bias ? v : 0);
    x.param_count = (v + sh.positions) * h + mixers + norms * x.norm_count + mlps + x.norm_count + head + x.mtp_modules * x.mtp_count + x.P_v;
    return x;
  }

  const DERIVED = {  // architecture.DERIVED
    shared: (x) => x.f_s > 0, latent: (x) => x.moe_latent > 0, mtp_moe: (x) => x.mtp > 0 && x.mtp_moe,
    mtp_repeated: (x) => x.mtp > 1 && x.mtp_repeated, gdn_repeat: (x) => x.gdn && x.lin_v_heads > x.lin_k_heads,
    narrow_v: (x) => x.v_dim > 0 && !x.mla, swa: (x) => x.swa_layers.length > 0,
  };

  // Architecture.of(shape).features() as json.dumps(..., sort_keys=True) writes it: data.arch_id hashes this text
  function features(x, decl) {
    const out = decl.architecture.map(([name, derived]) => {
      const value = derived ? DERIVED[name](x) : x[name];
      return [name, typeof value === "string" ? value : Boolean(value) && value !== 0];
    });
    out.sort((p, q) => p[0] < q[0] ? -1 : 1);
    return "{" + out.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(", ") + "}";
  }

  const mixed = (x) => (x.moe && x.dense_layers.length > 0) || x.gdn || x.mamba || x.blocks || x.swa_layers.length > 0;
  const LAYERS = { Lg_r: "linear_layers", Lm_r: "mamba_layers", Lo_r: "mixerless_layers", Ln_r: "mlpless_layers", Lw_r: "swa_layers" };

  function prefix(x, decl) {  // timedata.layer_prefixes
    const out = {};
    for (const kind of Object.keys(decl.kinds)) {
      const member = (i) => kind === "Le_r" ? x.is_moe_layer(i) : x[LAYERS[kind]].includes(i);
      const sums = [0];
      for (let i = 0; i < x.L; i++) sums.push(sums[i] + (member(i) ? 1 : 0));
      if (sums[x.L]) out[kind] = sums;
    }
    return out;
  }

  // data.model_data, but `arch` is the features' text (the page names its architecture by the built one of equal text)
  function modelData(sh, spec, decl) {
    const x = props(sh);
    const field = (name) => x[decl.training_field[name] || name];
    const inputs = Object.fromEntries(decl.from_model.map((name) => [name, field(name)]));
    const letters = { model: x.name, ...Object.fromEntries(decl.model_reads.map((name) => [name, x[name]])),
      ...Object.fromEntries(decl.model_letters.map(([letter, f]) => [letter, x[f]])),
      bias: x.qkv_bias || x.o_bias || x.mlp_bias || x.moe_bias || x.sinks, mamba: x.mamba || x.blocks,
      gemma: x.sandwich || x.logit_softcap || x.attn_softcap, mixed_kinds: mixed(x), vision: false,
      vision_mask: false, per_layer: false, gemma4: "",
      latent: x.moe_latent > 0, narrow_v: x.v_dim > 0 && !x.mla, swa_kv: x.swa_layers.length > 0 };
    if (x.gdn || x.mamba || x.blocks || x.dsa) throw new Error("the page's model types have no hybrid layers nor indexer");
    if ((x.layer_f || []).length || x.g_dh) throw new Error("the page's model types have no block configs nor Gemma 4 layers");
    const experts = x.L_e * x.E * x.expert_count;
    const values = Object.fromEntries(["h", "f", "a", "k", "v", "E", "k_e", "f_e", "f_s", "L_e"].map((n) => [n, x[n]]));
    Object.assign(values, { dh: x.dh, q_r: x.q_lora, kv_r: x.kv_lora, d_r: x.rope_dim, d_v: x.v_dim, n_mtp: x.mtp,
      k_w: x.swa_k, P_d: x.param_count - experts, P_x: experts });
    const proxy = Object.fromEntries(["h", "dh", "a", "k", "L", "L_e", "mlp_matrices", "f", "k_e", "f_e", "f_s", "E",
      "v", "param_count", "q_lora", "rope_dim", "kv_lora", "v_dim", "mla", "moe_latent", "expert_count"].map((n) => [n, x[n]]));
    return { name: x.name, spec, param_count: x.param_count, arch: features(x, decl), inputs, letters,
      mixed: mixed(x), prefix: prefix(x, decl), time: { values, sliding_window_layers: x.L_w }, proxy };
  }

  root.MEM4D_SHAPE = { modelData };
})(typeof window !== "undefined" ? window : globalThis);
