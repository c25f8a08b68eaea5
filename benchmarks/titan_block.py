"""torchtitan's Llama TransformerBlock as its December 2024 H100 benchmark ran it (9dec370: models/llama/model.py,
parallelisms/parallelize_llama.py), rebuilt in plain torch for benchmarks/torch_saved.py to list what it saves: the
block, its tensor-parallel plan, its checkpointing (full, and op-level SAC's save list) and torchao's Float8 swap."""

from __future__ import annotations

from collections import defaultdict


def block(torch, sizes: dict):
    nn, F = torch.nn, torch.nn.functional
    b, s, h, a, k, f = (sizes[x] for x in "bshakf")
    dh = h // a

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(h))

        def forward(self, x):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(x) * self.weight

    def rope(x, freqs):
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * freqs.view(1, s, 1, dh // 2)).flatten(3).type_as(x)

    def repeat_kv(x, n):
        bs, sl, kv, d = x.shape
        return x if n == 1 else x[:, :, :, None, :].expand(bs, sl, kv, n, d).reshape(bs, sl, kv * n, d)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.wq, self.wk = nn.Linear(h, a * dh, bias=False), nn.Linear(h, k * dh, bias=False)
            self.wv, self.wo = nn.Linear(h, k * dh, bias=False), nn.Linear(a * dh, h, bias=False)
            angles = torch.outer(torch.arange(s).float(), 1.0 / 500000 ** (torch.arange(0, dh, 2).float() / dh))
            self.register_buffer("freqs_cis", torch.polar(torch.ones_like(angles), angles), persistent=False)

        def forward(self, x):  # the heads as -1: the local heads under tensor parallelism
            q = rope(self.wq(x).view(b, s, -1, dh), self.freqs_cis)
            kk = rope(self.wk(x).view(b, s, -1, dh), self.freqs_cis)
            v = self.wv(x).view(b, s, -1, dh)
            kk, v = repeat_kv(kk, a // k), repeat_kv(v, a // k)
            out = F.scaled_dot_product_attention(
                q.transpose(1, 2), kk.transpose(1, 2), v.transpose(1, 2), is_causal=True
            )
            return self.wo(out.transpose(1, 2).contiguous().view(b, s, -1))

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1, self.w3 = nn.Linear(h, f, bias=False), nn.Linear(h, f, bias=False)
            self.w2 = nn.Linear(f, h, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention_norm, self.ffn_norm = RMSNorm(), RMSNorm()
            self.attention, self.feed_forward = Attention(), FeedForward()

        def forward(self, x):
            hh = x + self.attention(self.attention_norm(x))
            return hh + self.feed_forward(self.ffn_norm(hh))

    block = Block()
    for param in block.parameters():
        param.data = param.data.to(torch.bfloat16)
    return block


def tensor_parallel(torch, block, t: int, float8: str):
    """9dec370's apply_tp plan for a TransformerBlock (parallelize_llama.py, loss_parallel on): the norms
    SequenceParallel, the attention's and the FFN's inputs all-gathered from Shard(1) to Replicate (PrepareModuleInput),
    wq/wk/wv/w1/w3 ColwiseParallel, wo and w2 RowwiseParallel reduce-scattered to Shard(1); with Float8 (tensorwise
    only) torchao's Float8 styles in their place, which cast the inputs to FP8 before the all-gather. On a one-process
    "fake" process group of t ranks (torch.testing's FakeStore): every rank's shapes are rank 0's, no data moves."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    colwise, rowwise, prepare = ColwiseParallel, RowwiseParallel, PrepareModuleInput
    extra = lambda fqn: {}  # noqa: E731
    if float8 != "none":
        from torchao.float8.float8_tensor_parallel import (
            Float8ColwiseParallel,
            Float8RowwiseParallel,
            PrepareFloat8ModuleInput,
        )

        colwise, rowwise, prepare = Float8ColwiseParallel, Float8RowwiseParallel, PrepareFloat8ModuleInput
        extra = lambda fqn: {"fwd_config_submodule_fqn": fqn}  # noqa: E731
    mesh = init_device_mesh("cpu", (t,))
    parallelize_module(
        block,
        mesh,
        {
            "attention_norm": SequenceParallel(),
            "attention": prepare(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),), **extra("wq")),
            "attention.wq": colwise(),
            "attention.wk": colwise(),
            "attention.wv": colwise(),
            "attention.wo": rowwise(output_layouts=Shard(1)),
            "ffn_norm": SequenceParallel(),
            "feed_forward": prepare(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),), **extra("w1")),
            "feed_forward.w1": colwise(),
            "feed_forward.w3": colwise(),
            "feed_forward.w2": rowwise(output_layouts=Shard(1)),
        },
    )
    return block


def op_sac_context(torch, caches: list):
    """9dec370's selective "op" policy: save the outputs of the ops in _save_list, but only every second aten.mm;
    each context's cache of saved outputs is appended to `caches` (eager SAC keeps them there, not through autograd's
    saved-tensor hooks)."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    save = {
        aten.mm.default,
        aten._scaled_dot_product_efficient_attention.default,
        aten._scaled_dot_product_flash_attention.default,
        aten._scaled_dot_product_flash_attention_for_cpu.default,
        torch.ops._c10d_functional.reduce_scatter_tensor.default,
    }

    def context():
        counts = defaultdict(int)

        def policy(ctx, func, *args, **kwargs):
            mode = "recompute" if ctx.is_recompute else "forward"
            if func == aten.mm.default:
                counts[mode] += 1
            keep = func in save and not (func == aten.mm.default and counts[mode] % 2 == 0)
            return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

        modes = create_selective_checkpoint_contexts(policy)
        caches.append(modes[0].storage)
        return modes

    return context


def checkpointed(torch, block, mode: str, caches: list, policy=None):
    """The block as ptd_checkpoint_wrapper runs it: as is (none), whole (full) or under op-level SAC (selective: by
    `policy`, a context factory like op_sac_context, 9dec370's by default)."""
    from torch.utils.checkpoint import checkpoint

    if mode == "none":
        return block
    context = (policy or op_sac_context)(torch, caches) if mode == "selective" else None
    kwargs = {"use_reentrant": False, "preserve_rng_state": False}
    if context is not None:
        kwargs["context_fn"] = context

    def run(x):
        return checkpoint(block, x, **kwargs)

    return run


def float8(torch, block, recipe: str):
    """torchao's Float8 training on every linear of the block (torchtitan's float8 converter: convert_to_float8_training
    with Float8LinearConfig.from_recipe_name), dynamic scaling as torchao defines the recipe."""
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    return convert_to_float8_training(block, config=Float8LinearConfig.from_recipe_name(recipe))
