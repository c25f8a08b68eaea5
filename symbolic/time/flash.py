"""Causal flash attention's share of its card's figure by sequence length and head width: FlashAttention-2's forward +
backward TFLOP/s on H100 (Dao-AILab/flash-attention@0251105a assets/flash2_h100_fwd_bwd_benchmark.png, GEMM.md 5a:
causal, 16k tokens a batch), each point over the point the cards' figures stand at (head width 128, 8k: 308); the
curve's shape taken for every card (assumed, as gemm.py takes one family's), log-interpolated, at most 1."""

from __future__ import annotations

import numpy as np

SEQS = (512, 1024, 2048, 4096, 8192, 16384)
CAUSAL = {  # head width -> TFLOP/s at SEQS (GEMM.md 5a, causal rows)
    64: (141, 192, 232, 257, 273, 284),
    128: (163, 221, 265, 294, 308, 328),
}
REFERENCE = CAUSAL[128][SEQS.index(8192)]  # cards.py's attention figures: causal, head width 128, 8k


def share(head_dim, seq):
    """Causal attention's TFLOP/s at `head_dim` and `seq` keys (the rank's sequence, s/c) over the cards' reference
    point, numpy-broadcast: log-interpolated over the sequence, then over the head width between 64 and 128 (clamped
    to both tables' ends); never above 1, the cards' figures being upper ones ("up to")."""
    x = np.log2(np.clip(np.asarray(seq, dtype=float), SEQS[0], SEQS[-1]))
    narrow, wide = (np.interp(x, np.log2(SEQS), CAUSAL[w]) for w in (64, 128))
    wt = np.clip(np.log2(np.maximum(np.asarray(head_dim, dtype=float), 1.0)) - 6.0, 0.0, 1.0)  # 64 -> 0, 128 -> 1
    return np.minimum((narrow + wt * (wide - narrow)) / REFERENCE, 1.0)
