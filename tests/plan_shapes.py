"""The toy model tests/test_plan_best.py and tests/test_policies.py plan for beside the presets, and the Training a
row of plan's grid stands for (tests/test_plan.py, tests/test_rules.py)."""

from conftest import a_split
from tiny_shapes import tiny

from symbolic.config.training import Training

# DeepSeek-V2's MoE at toy sizes: 8 experts of 48, top 2, the first layer dense
LATENT_MOE = {"E": 8, "k_e": 2, "f_e": 48, "dense_layers": (0,)}

# a small MoE model with latent attention (DeepSeek-V2's layer at toy sizes; its recompute sets include mla_up_proj);
# head_dim a multiple of 8: a flash kernel takes it (rules: "flash attention: dh % 8, dh <= 256")
MLA_MOE = tiny("toy-mla-moe", k=4, L=6, head_dim=16, kv_lora=28, q_lora=20, rope_dim=8, v_dim=10, **LATENT_MOE)


def row_training(cluster, row: dict) -> Training:
    """A grid row's Training: its letters, ZeRO stage and, for an uneven (split) row, the most even valid split."""
    split = a_split(cluster.shape.L, row["p"], row["vpp"]) if row.get("split") else None
    letters = {x: row[x] for x in ("d", "t", "p", "c", "vpp", "b")}
    cluster_fields = {"s": cluster.s, "gbs": cluster.gbs, "sp": cluster.sp, "flash_attn": cluster.flash_attn}
    return Training(**letters, **cluster_fields, zero=row.get("zero", 1), stage_layers=split)
