"""Which link each parallel group's traffic crosses, and the bus bandwidth it gets there (numpy, so plan can pass
arrays): Megatron-Core lays ranks out tp innermost, then cp, ep, dp, pp (RankGenerator order "tp-cp-ep-dp-pp",
megatron-core 0.16.1 parallel_state.py:562; experts etp, ep, edp, pp by the expert generator, :798-805), so a
group of n ranks at stride `stride` stays on one NVLink domain when n stride <= its size."""

from __future__ import annotations

import numpy as np

from ..config.parallel import Parallel
from .systems import System

GB = 1e9


def ring(system: System, n, stride):
    """busbw (bytes/s) of a reduce-scatter / all-gather over n ranks at `stride`: the NVLink figure inside a domain;
    across k domains each holding g of the ranks, NIC x (n - 1) / (k - 1), the hierarchical all-reduce's per-NIC
    relation (ml-engineering network/README.md:1459, COLLECTIVES.md 1), never above NVLink's."""
    n, stride = np.asarray(n, dtype=float), np.asarray(stride, dtype=float)
    g = np.clip(np.floor(system.domain / stride), 1, np.maximum(n, 1))  # ranks of the group per domain
    k = np.maximum(n / g, 1)
    across = np.minimum(system.nvl_ring, system.net_ring * (n - 1) / np.maximum(k - 1, 1e-9))
    return GB * np.where((n * stride <= system.domain) | (n <= 1), system.nvl_ring, across)  # n 1: no traffic


def all_to_all(system: System, n, stride):
    """Effective busbw (bytes/s) of an all-to-all over n ranks at `stride`: the (g - 1) / n of a rank's bytes bound
    for its own domain go over NVLink while the (n - g) / n for other domains go over its NIC, at once; all-to-all
    'cannot aggregate the bandwidth of multiple NICs' (nccl-tests#267)."""
    n, stride = np.asarray(n, dtype=float), np.asarray(stride, dtype=float)
    g = np.clip(np.floor(system.domain / stride), 1, np.maximum(n, 1))
    seconds_per_byte = np.maximum((g - 1) / system.nvl_a2a, (n - g) / system.net_a2a) / np.maximum(n, 1)
    return GB * np.where(n > 1, (n - 1) / np.maximum(n, 1) / np.maximum(seconds_per_byte, 1e-30), system.nvl_a2a)


def point_to_point(system: System, span, stride):
    """Bandwidth (bytes/s) of a pipeline send to the next stage at `stride`: NVLink when all `span` ranks of the
    pipeline share a domain, else one NIC (its ring figure)."""
    span, stride = np.asarray(span, dtype=float), np.asarray(stride, dtype=float)
    return GB * np.where(span * stride <= system.domain, system.nvl_ring, system.net_ring)


def group_bandwidths(system: System, par: Parallel) -> dict:
    """W_tp, W_etp, W_cp, W_ep, W_dp, W_edp, W_pp for one layout (ints or arrays)."""
    t, c, d, p, e, t_e = par.t, par.c, par.d, par.p, par.e, par.t_e
    return {
        "W_tp": ring(system, t, 1),
        "W_etp": ring(system, t_e, 1),
        "W_cp": ring(system, c, t),
        "W_ep": all_to_all(system, e, t_e),
        "W_dp": ring(system, par.zero_group, t),
        "W_edp": ring(system, par.edp, e * t_e),
        "W_pp": point_to_point(system, p, t * c * d),
    }
