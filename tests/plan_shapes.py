"""The toy model tests/test_plan_best.py and tests/test_policies.py plan for beside the presets."""

from symbolic.config.shapes import ModelShape

# a small MoE model with latent attention (DeepSeek-V2's layer at toy sizes; its recompute sets include mla_up_proj);
# head_dim a multiple of 8: a flash kernel takes it (rules: "flash attention: dh % 8, dh <= 256")
MLA_MOE = ModelShape(
    "toy-mla-moe",
    h=64,
    f=176,
    a=4,
    k=4,
    L=6,
    v=136,
    head_dim=16,
    kv_lora=28,
    q_lora=20,
    rope_dim=8,
    v_dim=10,
    E=8,
    k_e=2,
    f_e=48,
    dense_layers=(0,),
)
