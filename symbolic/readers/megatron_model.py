"""Megatron-LM's model arguments -> ModelShape fields, as Megatron-Core builds the model (megatron-core 0.16.1:
transformer/transformer_config.py TransformerConfig.__post_init__ for the defaults of ffn_hidden_size (4 h),
kv_channels (h / a) and num_query_groups (a); ssm/mamba_mixer.py for Mamba-2's heads (expand 2: 2 h / head_dim),
d_conv 4 and its conv bias; megatron/training/arguments.py @ d98e8a64 for --swiglu's default ffn_hidden_size)."""

from __future__ import annotations

import ast

from .megatron_table import Args

GPT2_VOCAB = 50257  # GPT-2's BPE vocab.json (Megatron-LM's GPT2BPETokenizer)
DEFINES = ("num_layers", "hidden_size", "num_attention_heads", "hybrid_override_pattern", "hybrid_layer_pattern")
HYBRID = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}  # Megatron-Core's hybrid layer symbols
MTP_DEPTH = "*E"  # the one multi-token-prediction depth of a hybrid pattern modelled: attention, then MoE
MAMBA_EXPAND, MAMBA_CONV = 2, 4  # MambaMixer's expand and d_conv defaults


def _layer_freq(args: Args, L: int) -> tuple[int, ...]:
    """--moe-layer-freq as the dense layers: an int N puts an MoE layer every N-th layer (0, N, 2N...), a list
    expression such as ([0]*3+[1]*11) marks each layer (megatron/training/arguments.py moe_freq_type)."""
    freq = args.get("moe_layer_freq", 1)
    if isinstance(freq, int):
        return tuple(i for i in range(L) if i % freq)
    try:
        marks = _list_expr(ast.parse(str(freq), mode="eval").body)
    except (ValueError, SyntaxError):
        args.refuse("moe_layer_freq", "expected an integer or a list expression such as ([0]*3+[1]*11)")
        return ()
    if len(marks) != L or set(marks) - {0, 1}:
        args.refuse("moe_layer_freq", f"expected {L} marks of 0 or 1, got {len(marks)}")
        return ()
    return tuple(i for i, mark in enumerate(marks) if not mark)


def _list_expr(node) -> list:
    """A list literal with + and * of constants (no names, no calls)."""
    if isinstance(node, ast.List):
        return [_list_expr(item) for item in node.elts]
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        left, right = _list_expr(node.left), _list_expr(node.right)
        return left + right if isinstance(node.op, ast.Add) else left * right
    raise ValueError("not a list expression")


def _vocab(args: Args, given: int | None, model_given: bool) -> int:
    """The file's --vocab-size, else the GPT-2 BPE tokenizer's 50257 (its vocab.json and merges.txt), else the
    command line's --vocab-size (`given`); other tokenizers read their size from files mem4d does not open."""
    if args.given("vocab_size"):
        return args.get("vocab_size")
    kind = args.get("tokenizer_type")
    if kind == "GPT2BPETokenizer" or kind is None and args.given("vocab_file") and args.given("merge_file"):
        return GPT2_VOCAB
    if given or model_given:
        return given or 1  # --model gives the model: the file's is not used
    args.refuse(
        "tokenizer_type" if kind else "tokenizer_model" if args.given("tokenizer_model") else "vocab_size",
        "the vocabulary's size is in the tokenizer's files: give estimate --vocab-size V beside --megatron, "
        "or --model config.json",
    )
    return 1


def _pattern(args: Args) -> tuple[str | None, int]:
    """The hybrid layer pattern without its pipeline separators (or None) and the multi-token-prediction depths
    after its '/'s: "<main>/<mtp>/<mtp>..." (Megatron-LM d98e8a64 models/hybrid/hybrid_layer_allocation.py
    parse_hybrid_pattern, one depth per pattern after a '/'). A depth of an attention and an MoE block ("*E",
    Nemotron 3's) is the two-part layer components.mtp counts; other depths are refused."""
    pattern = args.get("hybrid_override_pattern") or args.get("hybrid_layer_pattern")
    if pattern is None:
        return None, 0
    main, *depths = pattern.split("/")
    if depths and set(depths) != {MTP_DEPTH}:
        args.refuse(
            "hybrid_layer_pattern",
            f"multi-token-prediction depths of an attention and an MoE block "
            f"('/{MTP_DEPTH}' each) are modelled, got '/{'/'.join(depths)}'",
        )
    main = main.replace("|", "")
    if set(main) - set(HYBRID):
        args.refuse("hybrid_layer_pattern", f"layer symbols {', '.join(HYBRID)} only")
    return main, len(depths)


def _mtp(args: Args, depths: int) -> dict:
    """The multi-token-prediction depths (the pattern's, where it has them; arguments.py then overrides
    --mtp-num-layers with them) and whether one module runs at every depth (--mtp-use-repeated-layer)."""
    given = args.get("mtp_num_layers") or 0
    if depths and given and given != depths:
        args.refuse("mtp_num_layers", f"contradicts the hybrid pattern's {depths} multi-token-prediction depths")
    return {"mtp": depths or given, "mtp_repeated": bool(args.get("mtp_use_repeated_layer") and (depths or given))}


def _attention(args: Args, h: int, a: int) -> dict:
    """Heads, widths, biases and norms of the attention (GQA or multi-latent)."""
    out = {
        "a": a,
        "k": args.get("num_query_groups") if args.get("group_query_attention") else a,
        "head_dim": args.get("kv_channels") or None,
        "qk_norm": "head" if args.get("qk_layernorm") else "none",
        "qkv_bias": bool(args.get("add_bias_linear") or args.get("add_qkv_bias")),
        "o_bias": bool(args.get("add_bias_linear")),
    }
    if args.given("num_query_groups") and not args.get("group_query_attention"):
        args.refuse(
            "num_query_groups", "without --group-query-attention Megatron-LM uses a query groups (contradicting)"
        )
    if args.get("multi_latent_attention"):  # its qk_layernorm: the latents' norms (mla spec), which MLA's count holds
        if not args.get("qk_layernorm"):
            args.refuse("multi_latent_attention", "MLA without its latents' norms (--qk-layernorm) is not modelled")
        if args.get("add_bias_linear"):
            args.refuse("add_bias_linear", "MLA with biased projections (no --disable-bias-linear) is not modelled")
        out.update(
            k=a,
            qk_norm="none",
            qkv_bias=False,
            o_bias=False,
            head_dim=args.get("qk_head_dim"),
            q_lora=args.get("q_lora_rank") or 0,
            kv_lora=args.get("kv_lora_rank"),
            rope_dim=args.get("qk_pos_emb_head_dim"),
            v_dim=args.get("v_head_dim"),
        )
    return out


def _experts(args: Args, L: int, f: int) -> dict:
    E = args.get("num_experts") or 0
    if not E:
        return {}
    groups = args.get("moe_router_num_groups") or 0
    return {
        "E": E,
        "k_e": args.get("moe_router_topk"),
        "f_e": args.get("moe_ffn_hidden_size") or f,
        "f_s": args.get("moe_shared_expert_intermediate_size") or 0,
        "shared_gate": bool(args.get("moe_shared_expert_gate")),
        "dense_layers": _layer_freq(args, L),
        "expert_bias": bool(args.get("moe_router_enable_expert_bias")),
        "sigmoid": args.get("moe_router_score_function") == "sigmoid",
        "groups": groups if groups > 1 else 0,
        "group_topk": args.get("moe_router_group_topk") or 0 if groups > 1 else 0,
    }


def _hybrid(args: Args, pattern: str, h: int) -> dict:
    """Mamba-2, attention, MLP and MoE blocks of a hybrid pattern (each block one part, as Megatron-Core's hybrid
    stack)."""
    where = {kind: tuple(i for i, ch in enumerate(pattern) if HYBRID[ch] == kind) for kind in set(HYBRID.values())}
    blocks = {
        "mamba_layers": where["mamba"],
        "mlpless_layers": tuple(sorted(where["mamba"] + where["attention"])),
        "mixerless_layers": tuple(sorted(where["mlp"] + where["moe"])),
    }
    if not where[
        "mamba"
    ]:  # no M in the pattern: Megatron-Core builds no Mamba mixer, and its --mamba-* sizes size nothing
        return blocks
    head = args.get("mamba_head_dim")
    return {
        **blocks,
        "ssm_heads": args.get("mamba_num_heads") or MAMBA_EXPAND * h // head,
        "ssm_head_dim": head,
        "ssm_state": args.get("mamba_state_dim"),
        "ssm_groups": args.get("mamba_num_groups"),
        "conv_width": MAMBA_CONV,
        "ssm_conv_bias": True,
    }


def _norm_mlp(args: Args) -> dict:
    norm = {"LayerNorm": "layer", "RMSNorm": "rms"}.get(args.get("normalization"))
    if norm is None:
        args.refuse("normalization", "LayerNorm and RMSNorm are modelled")
    if args.get("swiglu") and args.get("squared_relu"):
        args.refuse("squared_relu", "contradicts --swiglu")
    mlp = "swiglu" if args.get("swiglu") else "relu2" if args.get("squared_relu") else "gelu"
    hidden, attn = args.get("hidden_dropout"), args.get("attention_dropout")
    if (hidden > 0) != (attn > 0):
        args.refuse("hidden_dropout", "dropout in one place and not the other is not modelled")
    return {"norm": norm or "rms", "mlp": mlp, "dropout": hidden > 0 and attn > 0}


def model_fields(args: Args, training: dict, vocab: int | None = None, model_given: bool = False) -> dict | None:
    """The ModelShape fields the arguments define (None where they define no model: --model gives it); `vocab`: the
    command line's vocabulary size, used where the file's tokenizer holds it."""
    if not any(args.given(dest) for dest in DEFINES):
        return None
    pattern, depths = _pattern(args)
    L = len(pattern) if pattern else args.get("num_layers")
    if pattern and args.given("num_layers") and args.get("num_layers") != L:
        args.refuse("num_layers", f"contradicts the hybrid pattern's {L} layers")
    h, a = args.get("hidden_size"), args.get("num_attention_heads")
    if not (L and h and a):
        args.refuse("num_layers", "the model needs --num-layers, --hidden-size and --num-attention-heads")
        return None
    f = args.get("ffn_hidden_size") or (int(4 * h * 2 / 3 / 64) * 64 if args.get("swiglu") else 4 * h)
    position = args.get("position_embedding_type")
    if position not in ("learned_absolute", "rope", "none"):
        args.refuse("position_embedding_type", "learned_absolute, rope and none are modelled")
    for dest in (
        "use_rotary_position_embeddings",
        "add_position_embedding",
        "padded_vocab_size",
        "spec",
        "is_hybrid_model",
    ):
        if args.given(dest) and not (dest in ("spec", "is_hybrid_model") and pattern):
            args.refuse(
                dest, "an older or internal spelling: give --position-embedding-type, --vocab-size or a pattern"
            )
    out = {
        "name": args.path.name.split(".")[0],
        "h": h,
        "f": f,
        "L": L,
        "v": _vocab(args, vocab, model_given),
        "tied": not args.get("untie_embeddings_and_output_weights"),
        "mlp_bias": bool(args.get("add_bias_linear")),
        "positions": args.get("max_position_embeddings") or args.get("seq_length")
        if position == "learned_absolute"
        else 0,
        **_mtp(args, depths),
        **_attention(args, h, a),
        **_norm_mlp(args),
        **_experts(args, L, f),
        **(_hybrid(args, pattern, h) if pattern else {}),
    }
    if pattern and ("E" in pattern) != bool(out.get("E")):
        args.refuse("num_experts", "E blocks in the hybrid pattern need --num-experts, and --num-experts E blocks")
    if pattern and out.get("E"):  # the pattern places the MoE blocks (megatron-core 0.16.1 ssm/mamba_block.py), not
        # --moe-layer-freq; squared-ReLU experts keep relu's output and its square unfused (components.moe)
        out["dense_layers"] = tuple(i for i, ch in enumerate(pattern) if ch != "E")
        out["moe_latent"] = args.get("moe_latent_size") or 0
    elif args.get("moe_latent_size"):
        args.refuse("moe_latent_size", "a latent MoE is modelled in a hybrid pattern's E blocks")
    if out.get("E") and out["mlp_bias"]:
        args.refuse("add_bias_linear", "biases on routed experts' linears (no --disable-bias-linear) are not modelled")
    return out
