"""Megatron-Core's pipeline layouts under virtual stages: the transformer layers of each (pipeline rank, virtual
chunk) from --pipeline-layout (transformer/pipeline_parallel_layer_layout.py, megatron-core 0.16.1) or from
--account-for-embedding / --account-for-loss (transformer/transformer_block.py get_num_layers_to_build), and the
layers whose activations the interleaved 1F1B schedule keeps alive on each rank at its peak
(pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving)."""

from __future__ import annotations

import re

from .errors import ConfigError

UNITS = "EtmL"  # LayerType's letters: embedding, transformer (decoder) layer, MTP layer, loss


def parse_layout(text: str) -> list[str]:
    """PipelineParallelLayerLayout.parse_str_to_list: commas dropped, '(..)*n' then 'x*n' unrolled (one pass each),
    the virtual stages split at '|' ('Et*2|(tt|)*2L' -> ['Ett', 'tt', 'ttL'])."""
    text = text.replace(",", "")
    text = re.sub(r"\(([^)]+)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
    text = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
    return text.split("|")


def layout_chunks(text: str, p: int) -> tuple[tuple[int, ...], ...]:
    """The transformer layers ('t') of each rank's virtual chunks: virtual stage j p + r is chunk j of rank r (the
    layout's 1-D list made 2-D as PipelineParallelLayerLayout.__init__ does); a one-line ConfigError where the
    string is no layout of p ranks."""
    stages = parse_layout(text)
    flat = "".join(stages)
    if set(flat) - set(UNITS) or len(stages) % p:
        raise ConfigError(
            f"--pipeline-layout {text!r}: {len(stages)} virtual stages of {', '.join(UNITS)} (found "
            f"{''.join(sorted(set(flat)))}) must be a multiple of pp={p} (Megatron-Core's layout asserts)"
        )
    if (flat[:1], flat[-1:], flat.count("E"), flat.count("L")) != ("E", "L", 1, 1):
        raise ConfigError(
            f"--pipeline-layout {text!r}: the embedding E first and the loss L last, once each (validate_layer_layout)"
        )
    if "t" in flat[flat.find("m") :] and "m" in flat or "m" in "".join(stages[:-1]):
        raise ConfigError(
            f"--pipeline-layout {text!r}: MTP layers m after every t, in the last virtual stage alone "
            "(mem4d holds them with the head)"
        )
    vpp = len(stages) // p
    return tuple(tuple(stages[j * p + r].count("t") for j in range(vpp)) for r in range(p))


def accounted_chunks(L: int, p: int, vpp: int, embedding: bool, loss: bool) -> tuple[tuple[int, ...], ...]:
    """--account-for-embedding/loss-in-pipeline-split: L + 1 (+ 1) units, units / (p vpp) per virtual stage, the
    first rank's first chunk one layer short for the embedding, the last rank's last chunk one short for the loss."""
    units = L + embedding + loss
    if units % (p * vpp):
        raise ConfigError(
            f"--account-for-embedding/--account-for-loss: {units} pipeline units (L={L} layers"
            f"{' + embedding' if embedding else ''}{' + loss' if loss else ''}) over pp x vpp = "
            f"{p}x{vpp} virtual stages do not divide (Megatron-Core's get_num_layers_to_build asserts)"
        )
    each = units // (p * vpp)
    chunks = [[each] * vpp for _ in range(p)]
    chunks[0][0] -= embedding
    chunks[-1][-1] -= loss
    return tuple(map(tuple, chunks))


def schedule_chunks(m: int, p: int, vpp: int, forward: bool = True) -> list[int]:
    """The model chunk of each virtual micro batch on a rank (get_schedule_table with Megatron-Core's default group
    of p micro batches, ModelParallelConfig.__post_init__; backward runs the chunks in reverse)."""
    table = [
        chunk
        for start in range(0, m, p)
        for chunk in range(vpp)
        for _ in range(start, m if start + p >= m else start + p)
    ]
    return table if forward else [vpp - 1 - chunk for chunk in table]


def held_layers(chunks: tuple[int, ...], m: int, p: int, r: int) -> int:
    """Layers' activations of micro batches rank r holds at its peak under interleaved 1F1B: the warm-up's
    2 (p - r - 1) + (vpp - 1) p forwards, then each steady step's forward before its backward (chunks of their own
    sizes, so the most held is read off the schedule, not counted as micro batches)."""
    vpp = len(chunks)
    total = m * vpp
    warmup = min(2 * (p - r - 1) + (vpp - 1) * p, total)
    fwd, bwd = schedule_chunks(m, p, vpp), schedule_chunks(m, p, vpp, forward=False)
    held = sum(chunks[c] for c in fwd[:warmup])
    peak = held
    for k in range(total - warmup):  # steady state: forward warmup + k, then backward k
        held += chunks[fwd[warmup + k]]
        peak = max(peak, held)
        held -= chunks[bwd[k]]
    return peak


def check(training) -> None:
    """--pipeline-layout beside --account-for-*, --stage-layers or another vpp, the account flags beside
    --stage-layers: one line each (Megatron-Core's TransformerConfig raises on each)."""
    accounted = training.account_embedding or training.account_loss
    if training.pipeline_layout is None:
        if accounted and training.stage_layers is not None:
            raise ConfigError(
                "--account-for-embedding/--account-for-loss place the layers themselves: drop --stage-layers"
            )
        return
    if not isinstance(training.pipeline_layout, str) or accounted or training.stage_layers is not None:
        raise ConfigError(
            "--pipeline-layout places every layer itself: it takes a layout string, without "
            "--stage-layers or --account-for-embedding/--account-for-loss"
        )
    vpp = len(layout_chunks(training.pipeline_layout, training.p)[0])
    if vpp != training.vpp:
        raise ConfigError(
            f"--pipeline-layout {training.pipeline_layout!r} has {vpp} virtual stages per rank over "
            f"pp={training.p}, but --vpp {training.vpp}"
        )


def held(training, L: int) -> tuple[float | None, ...] | None:
    """None unless chunked; else each rank's in-flight count m_r in whole-rank equivalents: the layers it holds at its peak over its layers
    (held_layers); None where the schedule is not interleaved (vpp = 1 or p = 1: the closed form's count holds)."""
    if not training.chunked:
        return None
    if training.vpp == 1 or training.p == 1:
        return (None,) * training.p
    return tuple(held_layers(c, training.m, training.p, r) / max(sum(c), 1) for r, c in enumerate(training.chunks(L)))


def held_combined(layers: tuple[tuple[tuple[float, float], ...], ...], m: int, p: int, r: int) -> float:
    """What rank r holds at its peak under the combined 1F1B of --overlap-moe-expert-parallel-comm, `layers[j]` each
    layer of chunk j as (its bytes for one micro batch, of which its post-process's: an MTP layer's own final norm,
    LM head and logits): one more warm-up forward than interleaved 1F1B (megatron-core 0.16.1 schedules.py
    get_pp_rank_microbatches), then each steady step runs a chunk's forward beside another micro batch's backward
    layer by layer (models/common/model_chunk_schedule_plan.py run, TransformerLayerSchedulePlan.run): phase i
    first runs backward layer n_b - 1 - i's post-process (mtp_post_process.backward), then forward layer i whole,
    then releases the backward layer; the longer chunk's remaining layers alone, the backward's layer 0 released
    last. Layers whole otherwise: an upper bound by the part of a backward layer freed inside its phase."""
    vpp = len(layers)
    total = m * vpp
    warmup = min(2 * (p - r - 1) + (vpp - 1) * p + 1, total)
    fwd, bwd = schedule_chunks(m, p, vpp), schedule_chunks(m, p, vpp, forward=False)
    held = sum(whole for c in fwd[:warmup] for whole, _ in layers[c])
    peak = held
    for k in range(total - warmup):
        f, b = layers[fwd[warmup + k]], layers[bwd[k]]
        for i in range(max(len(f), len(b))):
            if i < len(b):
                held -= b[-1 - i][1]
            if i < len(f):
                held += f[i][0]
                peak = max(peak, held)
            if i < len(b) - 1:
                held -= b[-1 - i][0] - b[-1 - i][1]
        held -= b[0][0] - b[0][1] if b else 0
    return peak


def held_weighted(
    training, weights: tuple[tuple[tuple[tuple[float, float], ...], ...], ...]
) -> tuple[float | None, ...] | None:
    """held with each layer weighed by its bytes per micro batch (`weights[r][j]`: each layer of rank r's chunk j as
    (its bytes, of which its post-process's), of its kind, and the multi-token-prediction modules as the last rank's
    last layer): the bytes rank r holds at the schedule's peak (held_layers over the chunks' sums; held_combined
    under --ep-overlap) over its layers' bytes of one micro batch, so a rank whose chunks differ in size and kind
    (dense and MoE layers, Mamba-2, the MTP chunk) keeps the chunks the schedule holds, not a share of every layer
    alike; held's answer where the schedule is not interleaved."""
    if not training.chunked and not training.ep_overlap:
        return None
    if training.vpp == 1 or training.p == 1:
        return (None,) * training.p
    out = []
    for r, w in enumerate(weights):
        sums = tuple(sum(whole for whole, _ in chunk) for chunk in w)
        peak = (
            held_combined(w, training.m, training.p, r)
            if training.ep_overlap
            else held_layers(sums, training.m, training.p, r)
        )
        out.append(peak / sum(sums) if sum(sums) > 0 else 0.0)
    return tuple(out)


def chunks(training, L: int) -> tuple[tuple[int, ...], ...]:
    """Layers of each rank's vpp chunks: as placed (--pipeline-layout, --account-for-*), else layers(L)[r] / vpp."""
    if training.pipeline_layout is not None:
        return layout_chunks(training.pipeline_layout, training.p)
    if training.account_embedding or training.account_loss:
        return accounted_chunks(L, training.p, training.vpp, training.account_embedding, training.account_loss)
    return tuple((n // training.vpp,) * training.vpp for n in training.layers(L))


def problem(training, shape) -> str:
    """What keeps mem4d from placing `shape`'s layers as training says ("" where nothing): the layout's t and m
    against L and the MTP modules, units that do not divide, a rank with no layer (a model of several layer kinds
    whose rank holds chunks of unequal sizes: held_weighted, which estimate applies)."""
    if not training.chunked:
        return ""
    if training.pipeline_layout is not None:
        flat = "".join(parse_layout(training.pipeline_layout))
        if (flat.count("t"), flat.count("m")) != (shape.L, shape.mtp):
            return (
                f"--pipeline-layout places {flat.count('t')} t and {flat.count('m')} m, but {shape.name} has "
                f"L={shape.L} layers and {shape.mtp} MTP modules (validate_layer_layout)"
            )
    try:
        placed = chunks(training, shape.L)
    except ConfigError as err:
        return str(err)
    if min(map(sum, placed)) < 1:
        return f"a pipeline rank holding no transformer layer ({placed}) is not modelled"
    return ""
