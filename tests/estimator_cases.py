"""The cases tests/test_estimator.py draws: the switch combinations it lambdifies (every layer kind mem4d models at
least once) and hypothesis' strategy of glossary values, from tiny to beyond any published model."""

from hypothesis import strategies as st

from symbolic.config.switches import Switches


# Qwen3-Next's layers: Gated DeltaNet (heads repeated), gated attention with biases, MoE with a gated shared expert, MTP
QWEN3_NEXT = ("gdn", "gdn_repeat", "attn_gate", "qkv_bias", "moe", "shared", "shared_gate", "mtp", "mtp_moe")
SWITCHES = [
    Switches(),
    Switches(overheads=False),
    Switches(recompute="selective", flash_attn=False),
    Switches(recompute="full", sp=False),
    Switches(zero=0, flash_attn=False, sp=False),
    Switches(tied=True),
    Switches(moe=True, fp8=True),
    Switches(zero=3, moe=True, shared=True, shared_gate=True, qk_norm="head", qkv_bias=True),
    Switches(recompute="full", zero=2, moe=True, qk_norm="full", o_bias=True, mlp_bias=True),
    Switches(mla=True, q_lora=True, moe=True, shared=True, mtp=True, mtp_moe=True, expert_bias=True, sigmoid=True),
    Switches(mla=True, recompute="full", flash_attn=False, zero=3, mtp=True),
    Switches(mla=True, q_lora=True, dsa=True, moe=True, shared=True, expert_bias=True, sigmoid=True),
    Switches(**dict.fromkeys(QWEN3_NEXT, True), qk_norm="head"),
    Switches(mamba=True, blocks=True, recompute="full", zero=3, mlp="relu2", ssm_conv_bias=True),
    Switches(
        narrow_v=True, swa=True, swa_sinks=True, moe=True, expert_bias=True, sigmoid=True, zero=3, recompute="full"
    ),
]  # MiMo-V2-Flash's value heads and sliding-window kind


pick, whole = st.sampled_from, st.integers
# the glossary's letters (symbolic/config/glossary.py), a group of them a line
WIDTHS = dict(s=pick([512, 2048, 8192, 131072]), b=whole(1, 16), h=pick([48, 4096, 16384]), f=whole(1, 60000))
HEADS = dict(a=pick([6, 32, 128]), k=pick([1, 2, 8]), dh=pick([8, 64, 128, 192]), L=whole(1, 128), v=whole(100, 260000))
DEGREES = dict(d=whole(1, 512), t=pick([1, 2, 4, 8]), p=whole(1, 32), c=pick([1, 2, 4, 16]))
SCHEDULE = dict(vpp=whole(1, 4), m=whole(1, 512))
BYTES = dict(B_w=pick([2, 4]), B_g=pick([2, 4]), B_o=pick([8, 12, 16]), B_a=pick([1, 2, 4]), B_l=pick([0, 2, 4]))
FP8_EXTRAS = dict(B_q=pick([1, 1.03125, 2]), B_c=pick([0, 1, 2.0625]), s_p=pick([0, 1024]), n_ac=pick([1, 2, 3]))
EXPERTS = dict(E=pick([8, 64, 256]), k_e=whole(1, 8), f_e=whole(1, 20000), f_s=whole(0, 20000), L_e=whole(1, 128))
EXPERT_LAYOUT = dict(C_f=pick([1, 1.25, 2]), d_l=pick([0, 96, 1024]), e=pick([1, 2, 8, 64]), t_e=pick([1, 2, 8]))
MLA = dict(q_r=pick([0, 24, 1536]), kv_r=pick([0, 28, 512]), d_r=pick([0, 8, 64]), d_v=pick([0, 10, 128]))
MTP_DSA = dict(n_mtp=pick([0, 1, 2]), n_i=pick([0, 4, 64]), d_i=pick([0, 80, 128]), k_i=pick([0, 64, 2048]))
GDN = dict(L_g=whole(0, 96), n_gk=pick([0, 4, 16]), n_gv=pick([0, 8, 32]), d_gk=pick([0, 24, 128]))
CONV = dict(d_gv=pick([0, 40, 128]), K_c=pick([0, 3, 4]))  # the Gated DeltaNet value width, both mixers' kernel
MAMBA_LAYERS = dict(L_m=whole(0, 64), L_o=whole(0, 64), L_n=whole(0, 64))
MAMBA = dict(n_m=pick([0, 16, 128]), d_m=pick([0, 24, 64]), d_s=pick([0, 40, 128]), g_m=pick([0, 4, 8]))
VISION = dict(P_v=pick([0, 4096, 595_266_800]), A_v=pick([0, 10752, 2_004_864]), n_v=pick([0, 64, 1024]))
WINDOW = dict(L_w=whole(0, 64), k_w=pick([0, 8, 16]))
GROUPS = [WIDTHS, HEADS, DEGREES, SCHEDULE, BYTES, FP8_EXTRAS, EXPERTS, EXPERT_LAYOUT, MLA, MTP_DSA, GDN, CONV]
configs = st.fixed_dictionaries(
    {k: v for group in [*GROUPS, MAMBA_LAYERS, MAMBA, VISION, WINDOW] for k, v in group.items()}
)
