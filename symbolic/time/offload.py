"""Transformer Engine's layer-level CPU activation offload (Megatron-Core --cpu-offloading-num-layers N) in step time:
the host-device copies of the N offloaded layers' saved tensors and the part of them the compute does not hide.

TE 2.20.2 pytorch/cpu_offload.py: each offloaded layer's tensors are copied to pinned host memory on one offload
stream after they are saved (OffloadableLayerState.start_offload, non_blocking copies behind per-tensor events); the
compute stream waits for layer i's copy at the forward of layer L - N + i (DefaultOffloadSynchronizer
_init_offload_synchronization_dicts, release_activation_forward_gpu_memory) and starts its reload at the backward of
layer L - 1 - N + i (start_reload), needing it at the backward of layer i. One stream, so the copies queue: a copy
that has not finished by its deadline stalls the compute stream. The card's host link (PCIe Gen5 on a DGX, the
Grace-Blackwell NVLink-C2C on GB200/GB300) times the copies; ../shared/data/hardware/CARDS.tsv has no such figure,
so HOST_LINK is empty and step time refuses a job with N > 0 rather than assume one."""

from __future__ import annotations

import sympy as sp

from ..components.base import Component
from ..config.errors import ConfigError

# GB/s one direction between a card and its host, by mem4d card name (time/cards.py): none is in CARDS.tsv or its
# sources, so none is stated here (a figure added must cite its datasheet)
HOST_LINK: dict[str, float] = {}

N_off, L_off, T_c, T_f = sp.symbols("N_off L_off T_c T_f", positive=True)


def exposed(direction: str) -> Component:
    """Seconds one micro batch's offload copies in one direction stall the compute stream: N layers' copies of T_c
    seconds each queue on one stream behind layers of T_f seconds of compute; layer i's copy may start when its layer
    is done ((i + 1) T_f, or when the copy before it ends) and must end by L - N + i layers of compute (forward
    release; the backward's reload the mirror image, T_f its layers' backward), so the stall is the largest deficit,
    at the first or the last offloaded layer."""
    return Component(
        f"T_off_{direction}",
        sp.Max(0, N_off * T_c - (L_off - 2) * T_f, T_c - (L_off - N_off - 1) * T_f),
        f"CPU activation offload's exposed {direction} copies (TE 2.20.2 pytorch/cpu_offload.py "
        "DefaultOffloadSynchronizer: one offload stream; release at layer L - N + i, reload from layer L - 1 - N + i)",
    )


def layer_offloaded_bytes(shape, training) -> float:
    """Bytes of one layer's saved tensors that the offload moves for one micro batch (those of at least 256 x 1024
    elements: components.offload.cpu_offload_kept keeps the rest), on one GPU."""
    from ..components import layer_tensors
    from ..components.offload import cpu_offload_kept
    from ..config.glossary import inputs_for
    from ..config.switches import Switches

    parts = layer_tensors(Switches.of(training, shape=shape))
    moved = sp.Add(*(part.expr for part in parts)) - cpu_offload_kept(parts)
    values = inputs_for(shape, training)
    return float(moved.xreplace({x: values[x.name] for x in moved.free_symbols}))


def offload_seconds(shape, training, card_name: str, compute_s: float) -> float:
    """T_off_fwd + T_off_bwd of every micro batch: the copies at the card's HOST_LINK, behind layers whose forward is a
    third and backward two thirds of the micro batch's compute (`compute_s`, its GEMMs and attention, Narayanan 2021)."""
    n = training.cpu_offload_layers
    copy_s = layer_offloaded_bytes(shape, training) / (HOST_LINK[card_name] * 1e9)
    per_layer = compute_s / shape.L
    total = 0.0
    for direction, share in (("fwd", 1 / 3), ("bwd", 2 / 3)):
        expr = exposed(direction).expr
        total += float(expr.subs({N_off: n, L_off: shape.L, T_c: copy_s, T_f: share * per_layer}))
    return training.m * total


def check(shape, training, card_name: str) -> None:
    """Refuse in one line a job with CPU activation offload on a card whose host link mem4d has no figure for."""
    n = getattr(training, "cpu_offload_layers", 0)
    if n and card_name not in HOST_LINK:
        moved = n * layer_offloaded_bytes(shape, training) / 2**30
        raise ConfigError(
            f"--cpu-offload-layers {n}: {moved:.1f} GiB a micro batch go to the host and back, but CARDS.tsv states "
            f"no host-device bandwidth for {card_name} (PCIe Gen5 / Grace-Blackwell NVLink-C2C), so their exposed "
            "time is not stated"
        )
