"""torchtitan's MoE layer (torchtitan 0.3.0: models/common/moe.py, token_dispatcher.py, ops/scatter_add.py) in place
of a TransformerBlock's FeedForward, rebuilt in plain torch for benchmarks/torch_saved.py to list what it saves, with
0.3.0's op-level SAC policy (distributed/activation_checkpoint.py: its save ops, every second mm/linear).

What is written out here from those files: the router (gate Linear(h, E) under autocast to fp32, sigmoid or softmax
in fp32, the expert bias added for the choice only, topk, gather of the chosen scores, route_norm, route_scale),
the routing map and its counts (no grad), LocalTokenDispatcher (argsort of the expert ids, the scores and the tokens
gathered in expert order, the token index // top_k), GroupedExperts (three torch._grouped_mm on the bf16 weights,
SiLU, product), the combine (the expert outputs upcast to fp32, scaled by their scores, cast back, scatter_add into
zeros through torchtitan's deterministic_scatter_add, which saves its index), and the shared experts (a FeedForward).
On the CPU torch's autocast to fp32 is disabled, so the router's cast is written out as CUDA's autocast does it (the
linear's input and weight cast to fp32)."""

from __future__ import annotations

import titan_block as titan  # benchmarks/titan_block.py


def _scatter_add(torch):
    """torchtitan's ops/scatter_add.py as an autograd function's apply."""

    class ScatterAdd(torch.autograd.Function):
        """ops/scatter_add.py: out.scatter_add(0, index, src); backward gathers by the saved index."""

        @staticmethod
        def forward(ctx, out, index, src):
            ctx.save_for_backward(index)
            return out.scatter_add(0, index, src)

        @staticmethod
        def backward(ctx, grad):
            (index,) = ctx.saved_tensors
            return grad, None, torch.gather(grad, 0, index)

    return ScatterAdd.apply


def _exchanged(torch, experts, routed, counts, ep: int):
    """AllToAllTokenDispatcher.dispatch from the count exchange on, the experts, and combine up to the score."""
    from torch.distributed._functional_collectives import all_to_all_single
    from torch.distributed.device_mesh import init_device_mesh

    local = counts.shape[0] // ep

    mesh = init_device_mesh("cpu", (ep,))
    received = counts.view(ep, -1)[0].repeat(ep)  # rank-major (rank, local expert) counts, every rank alike
    inputs = counts.view(ep, -1).sum(dim=1).tolist()
    outputs = received.view(ep, -1).sum(dim=1).tolist()
    routed = all_to_all_single(routed, outputs, inputs, mesh)
    # _permute: rank-major to expert-major
    starts = (received.cumsum(0) - received).view(ep, local).t().reshape(-1)
    lengths = received.view(ep, local).t().reshape(-1)
    segment = torch.arange(lengths.shape[0]).repeat_interleave(lengths, output_size=routed.shape[0])
    permuted = starts[segment] + torch.arange(segment.shape[0]) - (lengths.cumsum(0) - lengths)[segment]
    shape = routed.shape
    out = experts(routed[permuted, :], received.view(ep, local).sum(0))
    unpermuted = out.new_empty(shape)  # _unpermute
    unpermuted[permuted, :] = out
    return all_to_all_single(unpermuted, inputs, outputs, mesh)


def _moe_class(torch, sizes: dict, sigmoid: bool, shared: bool, ep: int):
    """torchtitan 0.3.0's MoE module (moe_block's feed_forward) for these sizes, scores and expert parallelism."""
    nn, F = torch.nn, torch.nn.functional
    h, E, K, fe, fs = (sizes[x] for x in ("h", "E", "k_e", "f_e", "f_s"))
    scatter_add = _scatter_add(torch)
    local = E // ep

    class MoE(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(h, E, bias=False)
            self.w1 = nn.Parameter(torch.randn(local, fe, h) * h**-0.5)
            self.w2 = nn.Parameter(torch.randn(local, h, fe) * fe**-0.5)
            self.w3 = nn.Parameter(torch.randn(local, fe, h) * h**-0.5)
            self.register_buffer("expert_bias", torch.zeros(E))
            self.register_buffer("tokens_per_expert", torch.zeros(E))
            if shared:
                self.shared = nn.ModuleDict(
                    {
                        "w1": nn.Linear(h, fs, bias=False),
                        "w2": nn.Linear(fs, h, bias=False),
                        "w3": nn.Linear(h, fs, bias=False),
                    }
                )

        def router(self, x):
            scores = F.linear(x.float(), self.gate.weight.float())  # autocast(float32) around the gate
            scores = torch.sigmoid(scores) if sigmoid else F.softmax(scores, dim=-1)
            _, ids = torch.topk(scores + self.expert_bias, k=K, dim=-1, sorted=False)
            if ep > 1:  # _debug_force_load_balance_routing's ids (torchtitan gathers the chosen scores first too, a
                # node that dies when they are replaced: gathered once here, so the listing holds no dead node's index)
                ids = torch.arange(ids.numel(), dtype=torch.int64).reshape(ids.shape) % E
            top = scores.gather(dim=-1, index=ids)
            top = top / (top.sum(dim=-1, keepdim=True) + 1e-20)  # route_norm
            return top * 1.0, ids, scores  # route_scale

        def experts(self, x, counts):
            offs = torch.cumsum(counts, dim=0, dtype=torch.int32)
            mm = lambda a, w: torch._grouped_mm(a, w.bfloat16().transpose(-2, -1), offs=offs)  # noqa: E731
            hidden = F.silu(mm(x.bfloat16(), self.w1)) * mm(x.bfloat16(), self.w3)
            return mm(hidden, self.w2).type_as(x)

        def exchanged(self, routed, counts):
            """AllToAllTokenDispatcher.dispatch from the count exchange on, the experts, and combine up to the score."""
            return _exchanged(torch, self.experts, routed, counts, ep)

        def forward(self, x):
            B, L, D = x.shape
            top, ids, scores = self.router(x)
            counts = torch.zeros_like(scores, dtype=torch.bool).scatter_(-1, ids, True).sum(dim=(0, 1))
            with torch.no_grad():
                self.tokens_per_expert.add_(counts)
            x_td, top_tk, ids_tk = x.view(B * L, D), top.view(B * L, K), ids.view(B * L, K)
            order = torch.argsort(ids_tk.view(-1), stable=True)
            top_sorted = top_tk.view(-1)[order]
            order = order // K
            if ep == 1:
                out = self.experts(x_td[order], counts)
            else:
                out = self.exchanged(x_td[order], counts)
            out = (out.to(torch.float32) * top_sorted.reshape(-1, 1)).to(out.dtype)
            out = scatter_add(torch.zeros_like(x_td), order.reshape(-1, 1).expand(-1, D), out).view(B, -1, D)
            if shared:
                out = out + self.shared["w2"](F.silu(self.shared["w1"](x)) * self.shared["w3"](x))
            return out

    return MoE


def moe_block(torch, sizes: dict, sigmoid: bool, shared: bool, ep: int = 1):
    """A 9dec370 TransformerBlock whose feed_forward is torchtitan 0.3.0's MoE (route_norm on, load_balance_coeff on:
    the expert bias buffer), bf16 weights as FSDP2's MixedPrecisionPolicy gathers them. With ep > 1 rank 0 of ep on
    the default (fake, one-process) group: AllToAllTokenDispatcher's dispatch and combine with torch's functional
    all_to_all_single, the E/ep local experts, and the routing balanced by torchtitan's own debug option
    (moe_force_load_balance: round-robin ids), every rank routing as this one (the fake group moves no data, so the
    token-count exchange is that symmetric one, written out)."""
    block = titan.block(torch, {**sizes, "f": 8})
    block.feed_forward = _moe_class(torch, sizes, sigmoid, shared, ep)()
    for param in block.parameters():
        param.data = param.data.to(torch.bfloat16)
    return block


def op_sac_context(torch, caches: list):
    """torchtitan 0.3.0's SelectiveAC policy: save the outputs of its save ops (the partitioner's compute-intensive ops,
    mm among them and _grouped_mm not; its SDPA variants, max, linear, topk; the reduce-scatter and the all-to-all),
    but only every second mm/linear; the CPU's flash kernel stands in for CUDA's, which the compute-intensive list
    holds. Each context's cache is appended to `caches`."""
    from collections import defaultdict

    from torch._functorch.partitioners import get_default_op_list
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    save = {op.default for op in get_default_op_list().compute_intensive_ops}
    save |= {
        aten._scaled_dot_product_cudnn_attention.default,
        aten._scaled_dot_product_attention_math.default,
        aten._scaled_dot_product_fused_attention_overrideable.default,
        aten.max.default,
        aten.linear.default,
        aten.topk.default,
        torch.ops._c10d_functional.reduce_scatter_tensor.default,
        torch.ops._c10d_functional.all_to_all_single.default,
        aten._scaled_dot_product_flash_attention_for_cpu.default,
    }
    mm_ops = (aten.mm.default, aten.linear.default)

    def context():
        counts = defaultdict(int)

        def policy(ctx, func, *args, **kwargs):
            mode = "recompute" if ctx.is_recompute else "forward"
            if func in mm_ops:
                counts[mode] += 1
            if func in save:
                if func in mm_ops and counts[mode] % 2 == 0:
                    return CheckpointPolicy.PREFER_RECOMPUTE
                return CheckpointPolicy.MUST_SAVE
            return CheckpointPolicy.PREFER_RECOMPUTE

        modes = create_selective_checkpoint_contexts(policy)
        caches.append(modes[0].storage)
        return modes

    return context
