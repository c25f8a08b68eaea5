"""What a model shape counts: the parameters of each of its parts (attention, norms, MLPs, experts, the indexer,
multi-token prediction) and of the whole model, as a mixin of ModelShape (shapes.py) that reads its fields."""

from __future__ import annotations

from .gemma4 import gemma4_count


class ParameterCounts:
    """Parameter counts of a ModelShape, read off its fields (every count as the reference implementation builds the
    tensors; sources in each docstring)."""

    @property
    def indexer_count(self) -> int:
        """Parameters of one layer's lightning indexer: wq_b [q_r, n_i d_i] from the query latent, wk [h, d_i], the
        key's LayerNorm weight and bias [d_i] each, weights_proj [h, n_i] (transformers' DeepseekV32Indexer,
        Megatron-Core DSAIndexer); 0 without one."""
        if not self.dsa:
            return 0
        n_i, d_i = self.index_heads, self.index_dim
        return self.q_lora * n_i * d_i + self.h * d_i + 2 * d_i + self.h * n_i

    @property
    def attention_count(self) -> int:
        """Parameters of one layer's attention: Q, O (h x a dh), K, V (h x k dh), their biases and q/k norms; with
        MLA the query path (q_a [h, q_r], its norm [q_r], q_b [q_r, a (dh + d_r)]; or q [h, a (dh + d_r)]), the
        key/value down-projection with the RoPE key (kv_a [h, kv_r + d_r]), its norm [kv_r], the up-projection kv_b
        [kv_r, a (dh + d_v)] and o [a d_v, h] (DeepSeek-V2 modeling, Megatron-Core MLASelfAttention), and the sparse
        attention's indexer where the model has one."""
        h, a, k, dh = self.h, self.a, self.k, self.dh
        if self.mla:
            qk, q_r = dh + self.rope_dim, self.q_lora
            q = h * q_r + q_r + q_r * a * qk if q_r else h * a * qk
            return (
                q
                + h * (self.kv_lora + self.rope_dim)
                + self.kv_lora
                + self.kv_lora * a * (dh + self.v_dim)
                + a * self.v_dim * h
                + self.indexer_count
            )
        return self.gqa_count(k, self.sinks)

    @property
    def swa_attention_count(self) -> int:
        """Parameters of one sliding-window layer's attention where those layers have KV heads of their own (k_w) and
        sinks only there (MiMo-V2-Flash's swa_num_key_value_heads, add_swa_attention_sink_bias); 0 without them."""
        return self.gqa_count(self.swa_k, self.swa_sinks) if self.swa_layers else 0

    @property
    def L_w(self) -> int:
        """Sliding-window layers with KV heads of their own (swa_layers); 0 without them."""
        return len(self.swa_layers)

    def gqa_count(self, k: int, sinks: bool) -> int:
        """GQA attention of k KV heads: Q [h, a dh], K [h, k dh], V [h, k d_v], O [a d_v, h] (d_v = dh unless
        v_dim says otherwise: transformers' MiMoV2FlashAttention), their biases, q/k norms, sinks [a], the gate."""
        h, a, dh = self.h, self.a, self.dh
        dv = self.v_dim or dh
        bias = (a * dh + k * dh + k * dv if self.qkv_bias else 0) + (h if self.o_bias else 0)
        norm = {"none": 0, "head": 2 * dh, "full": a * dh + k * dh, "weightless": 0}[self.qk_norm]
        gate = (h * a * dh + (a * dh if self.qkv_bias else 0)) if self.attn_gate else 0  # W_g and its bias
        return h * a * dh + h * k * dh + h * k * dv + a * dv * h + bias + norm + (a if sinks else 0) + gate

    @property
    def gdn_count(self) -> int:
        """Parameters of one Gated DeltaNet layer's mixer: in_proj [h, 2 n_gk d_gk + 2 n_gv d_gv + 2 n_gv] (queries,
        keys, values, the output gate z, beta and alpha), the causal depthwise conv1d [2 n_gk d_gk + n_gv d_gv, K_c]
        without a bias, dt_bias and A_log [n_gv], the gated RMSNorm's weight [d_gv] and out_proj [n_gv d_gv, h]
        (transformers 5.25.0 Qwen3NextGatedDeltaNet, Megatron-Core 0.16.1 GatedDeltaNet); 0 without them."""
        if not self.gdn:
            return 0
        qk, vd, hv = self.lin_k_heads * self.lin_k_dim, self.lin_v_heads * self.lin_v_dim, self.lin_v_heads
        return (
            self.h * (2 * qk + 2 * vd + 2 * hv)
            + (2 * qk + vd) * self.conv_width
            + 2 * hv
            + self.lin_v_dim
            + vd * self.h
        )

    @property
    def mlp_matrices(self) -> int:
        """h x f matrices of a dense MLP: 3 (SwiGLU gate, up, down) or 2 (GeLU fc1, fc2)."""
        return 3 if self.mlp == "swiglu" else 2

    @property
    def norm_count(self) -> int:
        """Parameters of one norm: h (RMSNorm weight) or 2h (LayerNorm weight and bias)."""
        return self.h * (1 if self.norm == "rms" else 2)

    @property
    def dense_mlp_count(self) -> int:
        """Parameters of one dense MLP of width f (mlp_count)."""
        return self.mlp_count(self.f)

    def mlp_count(self, f: int) -> int:
        """Parameters of a dense MLP of width f: its h x f matrices and their biases (one of width f per matrix but
        the down projection's, of width h)."""
        return self.mlp_matrices * self.h * f + ((self.mlp_matrices - 1) * f + self.h if self.mlp_bias else 0)

    @property
    def moe_mlp_count(self) -> int:
        """Parameters of one MoE layer's MLP: the router [h, E], E experts (expert_count), shared experts of the
        MLP's matrices (SwiGLU 3 h f_s, squared ReLU 2 h f_s) and their gate [h, 1], the score-correction bias [E]
        where the model has one, the router's bias [E] (moe_bias), and a latent MoE's projections [h, d_l] and
        [d_l, h] around the experts (transformers 5.25.0 NemotronHMoE fc1/fc2_latent_proj; Megatron-Core 0.16.1
        MoELayer)."""
        h = self.h
        return (
            h * self.E
            + self.E * self.expert_count
            + self.mlp_matrices * h * self.f_s
            + (h if self.shared_gate else 0)
            + (self.E if self.expert_bias else 0)
            + (self.E if self.moe_bias else 0)
            + 2 * h * self.moe_latent
        )

    @property
    def expert_count(self) -> int:
        """Parameters of one routed expert: gate, up and down 3 x f_e (a GeLU or squared-ReLU expert: up and down
        2 x f_e; x the hidden size h, or the latent width d_l of a latent MoE), with moe_bias their biases 2 f_e + h."""
        n, x = (2 if self.mlp == "swiglu" else 1), self.moe_latent or self.h
        return (n + 1) * x * self.f_e + (n * self.f_e + self.h if self.moe_bias else 0)

    @property
    def mtp_moe(self) -> bool:
        """Whether the multi-token-prediction modules' layers have routed experts: they repeat the last layer's kind
        (DeepSeek-V3: an MoE layer; Megatron-Core builds them from the decoder's last layer spec)."""
        return self.is_moe_layer(self.L - 1)

    @property
    def mtp_modules(self) -> int:
        """Multi-token-prediction modules held: one run at every depth with --mtp-use-repeated-layer, else one per
        depth (Megatron-LM d98e8a64 transformer/multi_token_prediction.py MultiTokenPredictionBlock._build_layers)."""
        return 1 if self.mtp and self.mtp_repeated else self.mtp

    @property
    def mtp_count(self) -> int:
        """Parameters of one multi-token-prediction module but the embedding and LM head it shares with the model:
        enorm and hnorm [h], eh_proj [2h, h], one transformer layer, its final norm [h] (DeepSeek-V3's layer 61;
        Megatron-Core MultiTokenPredictionLayer)."""
        h = self.h
        mlp = self.moe_mlp_count if self.mtp_moe else self.dense_mlp_count
        return 3 * self.norm_count + 2 * h * h + self.attention_count + 2 * self.norm_count + mlp

    @property
    def mamba_count(self) -> int:
        """Parameters of one Mamba-2 mixer: in_proj [h, 2 n_m d_m + 2 g_m d_s + n_m] (z, x, B, C, dt), the causal
        depthwise conv1d [n_m d_m + 2 g_m d_s, K_c] and its bias where it has one, dt_bias, A_log and D [n_m], the
        gated grouped RMSNorm's weight [n_m d_m], out_proj [n_m d_m, h] (transformers 5.25.0 NemotronHMamba2Mixer,
        Megatron-Core 0.16.1 MambaMixer); 0 without them."""
        if not self.mamba:
            return 0
        inner, conv = (
            self.ssm_heads * self.ssm_head_dim,
            self.ssm_heads * self.ssm_head_dim + 2 * self.ssm_groups * self.ssm_state,
        )
        return (
            self.h * (inner + conv + self.ssm_heads)
            + conv * (self.conv_width + (1 if self.ssm_conv_bias else 0))
            + 3 * self.ssm_heads
            + inner
            + inner * self.h
        )

    @property
    def param_count(self) -> int:
        """Every parameter: embedding (and learned positions), L x (2 norms or 4 with sandwich norms, attention, a
        Gated DeltaNet or a Mamba-2 mixer, a dense MLP or an MoE MLP; a one-part block its part and one norm; a block
        config per layer each layer's attention and MLP at their own sizes, each with its norm, where present), final
        norm, LM head unless tied (and its bias [v] where it has one), the multi-token-prediction modules and a vision
        tower; Gemma 4's layers as config.gemma4 counts them."""
        if self.g_dh:
            return gemma4_count(self) + self.P_v
        h, v, L = self.h, self.v, self.L
        mlps = self.L_e * self.moe_mlp_count + (L - self.L_e - self.L_n) * self.dense_mlp_count
        norms = L * (4 if self.sandwich else 2) - self.L_o - self.L_n  # one per part a layer holds
        mixers = (
            (L - self.L_g - self.L_m - self.L_o - self.L_w) * self.attention_count
            + self.L_g * self.gdn_count
            + self.L_m * self.mamba_count
            + self.L_w * self.swa_attention_count
        )
        if self.layer_f:  # a block config per layer (DeciLM): each part at its own width, with its norm, where present
            mlps = sum(self.mlp_count(f) for f in self.layer_f if f)
            mixers = sum(self.gqa_count(k, self.sinks) for k in self.layer_k if k)
            norms = sum(1 for n in self.layer_k + self.layer_f if n)
        head = (0 if self.tied else h * v) + (v if self.head_bias else 0)
        return (
            (v + self.positions) * h
            + mixers
            + norms * self.norm_count
            + mlps
            + self.norm_count
            + head
            + self.mtp_modules * self.mtp_count
            + self.P_v
        )

    @property
    def P_v(self) -> int:
        """The vision tower's and projector's parameters (config.vision; 0 for a text model)."""
        return self.vision.params if self.vision else 0

    @property
    def A_v(self) -> float:
        """Elements the vision tower keeps for backward per image token (config.vision; 0 for a text model; Llama 4's
        a fraction: a tile's rows, its class row included, over its image tokens)."""
        return self.vision.saved_per_token if self.vision else 0

    @property
    def active_count(self) -> int:
        """Parameters one token passes through: param_count with k_e of the E routed experts in each MoE layer (and
        in each multi-token-prediction module's MoE layer)."""
        moe_layers = self.L_e + (self.mtp_modules if self.mtp_moe else 0)
        return self.param_count - moe_layers * (self.E - self.k_e) * self.expert_count
