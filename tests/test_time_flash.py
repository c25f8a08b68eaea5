"""time/flash.py: causal attention's share by head width and sequence, against GEMM.md 5a's FlashAttention-2 H100
forward + backward points (causal, 16k tokens a batch), exactly (1e-12) where the table has the point."""

import numpy as np
import pytest

from symbolic.time.flash import share


@pytest.mark.parametrize(
    "head_dim, seq, expected",
    [
        (128, 8192, 1.0),  # the cards' figures stand at this point
        (128, 4096, 294 / 308),
        (64, 4096, 257 / 308),  # gpt-oss's head width
        (64, 512, 141 / 308),
        (128, 256, 163 / 308),  # below the table: its first point
        (256, 4096, 294 / 308),  # wider than 128 (MLA's 192 too): the 128 row
        (128, 16384, 1.0),  # 328 / 308 capped: the cards' figures are upper ones
    ],
)
def test_share_at_the_table_points(head_dim, seq, expected):
    assert float(share(head_dim, seq)) == pytest.approx(expected, rel=1e-12)


def test_share_between_points_and_broadcast():
    """Between the table's points the share lies between its neighbours; arrays broadcast (plan passes them)."""
    mid = share(np.array([96, 128]), np.array([4096, 6000]))
    assert 257 / 308 < mid[0] < 294 / 308 and 294 / 308 < mid[1] < 1.0
