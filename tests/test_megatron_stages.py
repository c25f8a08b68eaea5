"""Megatron-LM's pipeline split read into mem4d's vpp and --stage-layers: uneven first/last stages, the embedding and
loss counted as pipeline units, a custom --pipeline-model-parallel-layout; refused by name where mem4d's stage model
cannot state it or Megatron-Core itself raises.

Source of truth: Megatron-Core 0.16.1's own placement (transformer_layer.py get_transformer_layer_offset and
transformer_block.py get_num_layers_to_build, transcribed below for the cases read here; the layout parser in
pipeline_parallel_layer_layout.py): every rank's model layers in mem4d (Training.layer_ranges) are the ones
Megatron-Core builds there, exactly; and mem4d's own --stage-layers (a file must give the same estimate)."""

import contextlib
import io
import json

import pytest

from symbolic.cli.entry import main
from symbolic.config.training import Training
from symbolic.readers.megatron import collect
from symbolic.readers.megatron_stages import parse_layout, stages

TINY = (
    "--hidden-size 64 --num-attention-heads 4 --vocab-size 128 --max-position-embeddings 128 --seq-length 128 "
    "--micro-batch-size 1"
)


def megatron_core(L: int, p: int, vpp: int | None, first=None, last=None, embedding=False, loss=False):
    """Each rank's virtual stages as model-layer ranges, as Megatron-Core 0.16.1 builds them (transcribed)."""
    out = []
    for rank in range(p):
        chunks = []
        for vp in range(vpp or 1):
            if first is not None or last is not None:
                middle_stages = p - (first is not None) - (last is not None)
                middle = L - (first or 0) - (last or 0)
                per_rank = middle // middle_stages if middle_stages else 0
                count = (
                    first
                    if rank == 0 and first is not None
                    else last
                    if rank == p - 1 and last is not None
                    else per_rank
                )
                if vpp:
                    f_chunk, l_chunk, m_chunk = (first or 0) // vpp, (last or 0) // vpp, middle // vpp
                    total = f_chunk + m_chunk + l_chunk
                    middle_rank = rank if first is None else rank - 1
                    offset = vp * total + (0 if rank == 0 else f_chunk + middle_rank * (m_chunk // middle_stages))
                    count //= vpp
                else:
                    offset = 0 if rank == 0 else (rank if first is None else rank - 1) * per_rank + (first or 0)
            else:
                units = L + embedding + loss
                count = units // p // (vpp or 1)
                offset = (vp * (units // (vpp or 1)) + rank * count) if vpp else rank * count
                offset -= embedding and not (vp == 0 and rank == 0)
                count -= embedding and vp == 0 and rank == 0
                count -= loss and vp == (vpp or 1) - 1 and rank == p - 1
            chunks.append(range(offset, offset + count))
        out.append(tuple(chunks))
    return tuple(out)


def read(tmp_path, text: str) -> tuple[dict, list[str]]:
    path = tmp_path / "run.args"
    path.write_text(f"{TINY} {text}\n")
    args = collect(path)
    return stages(args, args.get("pipeline_model_parallel_size")), args.problems


@pytest.mark.parametrize(
    "L,p,vpp,first,last,embedding,loss,split",
    [
        (16, 4, None, 2, 4, False, False, (2, 5, 5, 4)),
        (15, 4, None, None, 3, False, False, (4, 4, 4, 3)),
        (13, 4, None, 1, None, False, False, (1, 4, 4, 4)),
        (24, 4, 2, 4, 4, False, False, (4, 8, 8, 4)),
        (14, 4, None, None, None, True, True, (3, 4, 4, 3)),
        (15, 4, None, None, None, True, False, (3, 4, 4, 4)),
        (15, 2, None, None, None, False, True, (8, 7)),
    ],
)
def test_uneven_splits_place_the_layers_megatron_core_builds(tmp_path, L, p, vpp, first, last, embedding, loss, split):
    flags = f"--num-layers {L} --pipeline-model-parallel-size {p}" + (
        f" --num-virtual-stages-per-pipeline-rank {vpp}" if vpp else ""
    )
    flags += (f" --decoder-first-pipeline-num-layers {first}" if first else "") + (
        f" --decoder-last-pipeline-num-layers {last}" if last else ""
    )
    flags += (" --account-for-embedding-in-pipeline-split" if embedding else "") + (
        " --account-for-loss-in-pipeline-split" if loss else ""
    )
    got, problems = read(tmp_path, flags)
    assert not problems and got == {"vpp": vpp or 1, "stage_layers": split}
    training = Training(p=p, vpp=vpp or 1, stage_layers=split)
    assert training.layer_ranges(L) == megatron_core(L, p, vpp, first, last, embedding, loss)


@pytest.mark.parametrize(
    "layout,p,L,want",
    [
        ("Et*3|t*4|t*4|t*4L", 4, 15, {"vpp": 1, "stage_layers": (3, 4, 4, 4)}),
        ("Ettt|tttt,|tttt|ttttL", 4, 15, {"vpp": 1, "stage_layers": (3, 4, 4, 4)}),  # commas are cosmetic
        ("E(tt|)*3ttL", 2, 8, {"vpp": 2, "stage_layers": None}),  # even: 2 per chunk
        ("Et|tt|t|ttL", 2, 6, {"vpp": 2, "stage_layers": (2, 4)}),
    ],
)
def test_a_layout_of_equal_chunks_per_rank_is_read(tmp_path, layout, p, L, want):
    got, problems = read(
        tmp_path, f"--num-layers {L} --pipeline-model-parallel-size {p} --pipeline-model-parallel-layout {layout}"
    )
    assert not problems and got == want
    assert [s.count("t") for s in parse_layout(layout)] == [
        len(r)
        for j in range(want["vpp"])
        for r in [
            Training(p=p, vpp=want["vpp"], stage_layers=want["stage_layers"]).layer_ranges(L)[i][j] for i in range(p)
        ]
    ]


@pytest.mark.parametrize(
    "flags,needle",
    [
        (
            "--num-layers 16 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 3",
            "--decoder-first-pipeline-num-layers 3 (16 layers over 4 stages",
        ),
        (
            (
                "--num-layers 16 --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
                "--decoder-first-pipeline-num-layers 3 --decoder-last-pipeline-num-layers 3"
            ),
            "Megatron-Core's TransformerConfig",
        ),
        (
            (
                "--num-layers 16 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 4 "
                "--account-for-embedding-in-pipeline-split"
            ),
            "--account-for-embedding-in-pipeline-split (beside --decoder-first",
        ),
        (
            (
                "--num-layers 16 --pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 8 "
                "--pipeline-model-parallel-layout Et*8|t*8L"
            ),
            "--decoder-first-pipeline-num-layers 8 (beside --pipeline-model",
        ),
        (
            "--num-layers 14 --pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split",
            "15 pipeline units over 4 x 1 stages",
        ),
        (
            "--num-layers 3 --pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split",
            "a pipeline rank holding no transformer layer (0,1,1,1)",
        ),
        (
            "--num-layers 8 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Et*3|t*4L",
            "E first, L last, once each, 8 t",
        ),
        ("--num-layers 8 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Et*4|Et*4L", "once each"),
        (
            "--num-layers 8 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Et*4|t*4xL",
            "virtual stages of E, t, m, L",
        ),
        (
            (
                "--num-layers 8 --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 4 "
                "--pipeline-model-parallel-layout Et*4|t*4L"
            ),
            "for pp 2, vpp 4",
        ),
        (
            (
                "--num-layers 4 --pipeline-model-parallel-size 2 --mtp-num-layers 1 --pipeline-model-parallel-layout "
                "Ett|tt|m|L"
            ),
            "MTP layers before the last virtual stage",
        ),
    ],
)
def test_splits_mem4d_cannot_state_or_megatron_core_refuses_are_named(tmp_path, flags, needle):
    path = tmp_path / "run.args"
    path.write_text(f"{TINY} {flags}\n")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["estimate", "--megatron", str(path), "--gpus", "8"])
    assert (code, out.getvalue(), err.getvalue().count("\n")) == (2, "", 1) and needle in err.getvalue(), err.getvalue()


def test_a_file_with_first_and_last_stages_gives_the_estimate_of_stage_layers(tmp_path):
    """The same run stated with Megatron-LM's flags and with mem4d's --stage-layers: the same JSON, byte for byte."""
    path = tmp_path / "run.args"
    path.write_text(
        f"{TINY} --num-layers 16 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 2 "
        "--decoder-last-pipeline-num-layers 4 --bf16 --use-distributed-optimizer --global-batch-size 8\n"
    )
    reports = []
    for extra in ([], ["--stage-layers", "2,5,5,4"]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["estimate", "--megatron", str(path), "--gpus", "8", "--json", *extra])
        assert code == 0, err.getvalue()
        reports.append(json.loads(out.getvalue()))
    overridden = reports[1]["megatron"].pop("overridden")
    assert overridden == ["--stage-layers 2,5,5,4 from the command line (the file: 2,5,5,4)"]
    reports[0]["megatron"].pop("overridden")
    assert reports[0] == reports[1] and reports[0]["config"]["stage_layers"] == [2, 5, 5, 4]
