"""Megatron-LM's pipeline split -> mem4d's vpp and --stage-layers (the layers of each pipeline rank, its vpp chunks
equal and interleaved in model order: Training.layer_ranges) or, where a rank's chunks differ, --pipeline-layout and
--account-for-embedding/loss (config.layout), as Megatron-Core 0.16.1 builds it: an even split,
uneven first/last stages (transformer/transformer_block.py get_num_layers_to_build, transformer/transformer_layer.py
get_transformer_layer_offset), the embedding and loss counted as pipeline units (the same), or a custom layout
(transformer/pipeline_parallel_layer_layout.py); transformer/transformer_config.py's __post_init__ raises on the
contradictions named here. A split mem4d's stage model cannot state exactly is refused by name."""

from __future__ import annotations

from ..config.layout import parse_layout
from .megatron_table import Args

FIRST, LAST = "decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers"
EMBEDDING, LOSS = "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"
LAYOUT = "pipeline_model_parallel_layout"
CONTRADICTS = "contradicting: Megatron-Core's TransformerConfig raises"


def _hybrid_layout(args: Args) -> str | None:
    """A hybrid pattern's pipeline segments ('|', p x vpp of them, in model order) as a layout, else None."""
    pattern = (args.get("hybrid_override_pattern") or args.get("hybrid_layer_pattern") or "").split("/")[0]
    if "|" not in pattern:
        return None
    return "E" + pattern.replace("M", "t").replace("*", "t").replace("-", "t").replace("E", "t") + "L"


def _vpp(args: Args, p: int, uneven: bool) -> int | None:
    """The virtual stages per rank the arguments give (None: not given)."""
    vpp = args.get("num_virtual_stages_per_pipeline_rank")
    per_chunk = args.get("num_layers_per_virtual_pipeline_stage")
    if per_chunk and not vpp and args.get("num_layers"):
        if uneven:
            args.refuse(
                "num_layers_per_virtual_pipeline_stage",
                "beside an uneven split: give --num-virtual-stages-per-pipeline-rank",
            )
            return None
        vpp = args.get("num_layers") // (p * per_chunk)  # Megatron-LM: vpp = L / (p x layers per virtual stage)
    return vpp


def stages(args: Args, p: int) -> dict:
    """vpp and stage_layers (None: L/p each) from the layout, the first/last stage sizes, the embedding and loss as
    pipeline units, or the virtual stage sizes."""
    layout = args.get(LAYOUT)
    uneven = [dest for dest in (FIRST, LAST, EMBEDDING, LOSS) if args.get(dest)]
    if layout is not None and uneven:
        for dest in uneven:
            args.refuse(dest, f"beside --pipeline-model-parallel-layout ({CONTRADICTS})")
        return {"vpp": 1}
    if args.get(FIRST) is not None or args.get(LAST) is not None:
        for dest in (EMBEDDING, LOSS):
            if args.get(dest):
                args.refuse(dest, f"beside --decoder-first/last-pipeline-num-layers ({CONTRADICTS})")
        return _first_last(args, p, _vpp(args, p, True) or 1)
    if args.get(EMBEDDING) or args.get(LOSS):
        return _accounted(args, p, _vpp(args, p, True) or 1)
    if layout is not None:
        return _from_layout(args, layout, p)
    hybrid = _hybrid_layout(args)
    return {"vpp": _vpp(args, p, False) or 1} if hybrid is None else _from_layout(args, hybrid, p, checked=False)


def _split(args: Args, dest: str, layers: list[int], vpp: int) -> dict:
    """The split as mem4d states it (None where even), or refused by `dest` where a rank would hold no layer."""
    if min(layers) < 1:
        args.refuse(
            dest, f"a pipeline rank holding no transformer layer ({','.join(map(str, layers))}) is no --stage-layers"
        )
        return {"vpp": vpp}
    return {"vpp": vpp, "stage_layers": None if len(set(layers)) == 1 else tuple(layers)}


def _first_last(args: Args, p: int, vpp: int) -> dict:
    """--decoder-first/last-pipeline-num-layers: those ranks hold that many, the middle ones the rest evenly."""
    first, last, L = args.get(FIRST), args.get(LAST), args.get("num_layers")
    dest = FIRST if first is not None else LAST
    if L is None or p < 2:
        args.refuse(dest, "needs --num-layers in the file" if L is None else "with one pipeline stage (contradicting)")
        return {"vpp": vpp}
    middle_ranks = p - (first is not None) - (last is not None)
    middle = L - (first or 0) - (last or 0)
    ends = [n for n in (first, last) if n is not None]
    if (
        min(ends) < 1
        or any(n % vpp for n in ends)
        or bool(middle) != bool(middle_ranks)
        or (middle_ranks and (middle < 0 or middle % middle_ranks or middle // middle_ranks % vpp))
    ):
        args.refuse(
            dest,
            f"{L} layers over {p} stages of which the first/last hold {first}/{last} with vpp {vpp} ({CONTRADICTS})",
        )
        return {"vpp": vpp}
    inner = middle // middle_ranks if middle_ranks else 0
    layers = [first or inner, *[inner] * (p - 2), last or inner]
    return _split(args, dest, layers, vpp)


def _accounted(args: Args, p: int, vpp: int) -> dict:
    """--account-for-embedding/loss-in-pipeline-split: L + 1 (+ 1) units over p ranks, the first (last) rank's
    first (last) virtual stage one transformer layer short."""
    dest = EMBEDDING if args.get(EMBEDDING) else LOSS
    L = args.get("num_layers")
    if L is None:
        args.refuse(dest, "needs --num-layers in the file")
        return {"vpp": vpp}
    units = L + bool(args.get(EMBEDDING)) + bool(args.get(LOSS))
    if units % p or units // p % vpp:
        args.refuse(dest, f"{units} pipeline units over {p} x {vpp} stages ({CONTRADICTS})")
        return {"vpp": vpp}
    if vpp > 1 and p > 1:  # one chunk of a rank a layer short: mem4d's --account-for-* place them (config.layout)
        return {"vpp": vpp, "account_embedding": bool(args.get(EMBEDDING)), "account_loss": bool(args.get(LOSS))}
    layers = [units // p] * p
    layers[0] -= bool(args.get(EMBEDDING))
    layers[-1] -= bool(args.get(LOSS))
    return _split(args, dest, layers, vpp)


def _counted(flat: str, L: int | None, mtp: int) -> bool:
    """validate_layer_layout's counts: the embedding first and the loss last, once each, L decoder layers, the MTP
    layers after every decoder layer."""
    after = flat[flat.find("m") :] if "m" in flat else ""
    return (
        (flat[:1], flat[-1:], flat.count("E"), flat.count("L"), flat.count("m")) == ("E", "L", 1, 1, mtp)
        and (L is None or flat.count("t") == L)
        and "t" not in after
    )


def _from_layout(args: Args, layout: str, p: int, checked: bool = True) -> dict:
    """A custom layout (or, unchecked, a hybrid pattern's segments) as Megatron-Core validates it, each rank's virtual
    stages of equal size."""
    stages = parse_layout(layout)
    flat = "".join(stages)
    vpp = len(stages) // p or 1
    given = args.get("num_virtual_stages_per_pipeline_rank")
    L, mtp = args.get("num_layers"), args.get("mtp_num_layers") or 0
    if set(flat) - set("EtmL") or len(stages) % p or (given and given != vpp):
        args.refuse(
            LAYOUT,
            f"{len(stages)} virtual stages of E, t, m, L for pp {p}"
            + (f", vpp {given}" if given else "")
            + f" ({CONTRADICTS})",
        )
        return {"vpp": 1}
    if checked and not _counted(flat, L, mtp):
        args.refuse(LAYOUT, f"E first, L last, once each, {L} t and {mtp} m after them ({CONTRADICTS})")
        return {"vpp": vpp}
    if "m" in "".join(stages[:-1]):
        args.refuse(LAYOUT, "MTP layers before the last virtual stage are no --stage-layers")
        return {"vpp": vpp}
    ranks = [[stages[j * p + r].count("t") for j in range(vpp)] for r in range(p)]
    if any(len(set(rank)) > 1 for rank in ranks):
        if checked:  # chunks of their own sizes: mem4d's --pipeline-layout places them (config.layout)
            return {"vpp": vpp, "pipeline_layout": layout}
        args.refuse(LAYOUT, "unequal chunks on one rank of a hybrid pattern's segments are not modelled")
        return {"vpp": vpp}
    return _split(args, LAYOUT, [sum(rank) for rank in ranks], vpp)


def bf16_layers(args: Args, flags: dict) -> None:
    """--first-last-layers-bf16: decoder layers 0 .. n_start - 1 and L - n_end .. L - 1 (global indices; 1 and 1 by
    default) are built and run under a null context instead of Transformer Engine's FP8 one (megatron-core 0.16.1
    fp8_utils.py is_first_last_bf16_layer, get_fp8_context, fp4_utils.py get_fp4_context alike; transformer_block.py
    build_layer; MTP layers keep the global context): mem4d's --num-layers-at-start/end-in-bf16, each rank counting
    the ones it holds (Training.kind_layers: Lb_r). Without FP8 every layer's context is null anyway: nothing
    changes and nothing is set."""
    if not args.get("first_last_layers_bf16"):
        for dest in ("num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"):
            if args.given(dest):
                args.refuse(dest, "without --first-last-layers-bf16 it does nothing (contradicting)")
        return
    if flags.get("fp8", "none") == "none":
        return
    flags["num_layers_at_start_in_bf16"] = args.get("num_layers_at_start_in_bf16")
    flags["num_layers_at_end_in_bf16"] = args.get("num_layers_at_end_in_bf16")
