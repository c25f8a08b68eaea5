"""Pipeline layouts under virtual stages (config.layout): --account-for-embedding/--account-for-loss and
--pipeline-layout, stated directly and through the Megatron reader.

Sources of truth: Megatron-Core 0.16.1's placement (transformer_block.py get_num_layers_to_build and
transformer_layer.py get_transformer_layer_offset, transcribed in test_megatron_stages.megatron_core; the layout
parser, pipeline_parallel_layer_layout.py) for which layers each (rank, chunk) holds, exactly; the interleaved 1F1B
schedule (pipeline_parallel/schedules.py: 2 (p - r - 1) + (vpp - 1) p warm-up forwards, then one forward before each
backward, chunks in get_schedule_table's order) worked by hand, and mem4d's closed form of even chunks
(components.schedule.in_flight), which unequal chunks must reduce to when they are equal; mem4d's own --stage-layers
(the same layers on each rank give the same weights, gradients and optimizer states, to the byte)."""

import contextlib
import io
import json
from dataclasses import replace

import pytest

from symbolic.cli.entry import main
from symbolic.config.errors import ConfigError
from symbolic.config.layout import held_combined, held_layers, layout_chunks, schedule_chunks
from symbolic.config.training import Training
from symbolic.estimator.estimate import estimate
from symbolic.config.hfconfig import resolve_model

from test_megatron_stages import TINY, megatron_core, read


@pytest.mark.parametrize(
    "L,p,vpp,embedding,loss",
    [
        (14, 4, 2, True, True),
        (15, 4, 2, True, False),
        (15, 2, 4, False, True),
        (94, 8, 3, True, True),
        (126, 16, 4, True, True),
    ],
)
def test_accounted_chunks_place_the_layers_megatron_core_builds(L, p, vpp, embedding, loss):
    training = Training(p=p, vpp=vpp, gbs=p, account_embedding=embedding, account_loss=loss)
    assert training.layer_ranges(L) == megatron_core(L, p, vpp, embedding=embedding, loss=loss)


def test_a_layout_string_is_chunks_in_virtual_stage_order():
    # 'Et*3|(tt|)*2,tL' -> Ettt | tt | tt | tL; virtual stage j p + r is chunk j of rank r
    assert layout_chunks("Et*3|(tt|)*2,tL", 2) == ((3, 2), (2, 1))
    training = Training(p=2, vpp=2, gbs=4, pipeline_layout="Et*3|(tt|)*2,tL")
    assert training.layers(8) == (5, 3)
    assert training.layer_ranges(8) == ((range(0, 3), range(5, 7)), (range(3, 5), range(7, 8)))


def test_the_schedule_table_is_megatron_cores():
    # schedules.py's own example: PP2 N3M5 VP2 -> model chunks 0 0 0 1 1 1 0 0 1 1 (group size 3); group p = 2 here
    assert schedule_chunks(4, 2, 2) == [0, 0, 1, 1, 0, 0, 1, 1]
    assert schedule_chunks(4, 2, 2, forward=False) == [1, 1, 0, 0, 1, 1, 0, 0]


@pytest.mark.parametrize("p,vpp,m", [(2, 2, 4), (4, 3, 8), (8, 4, 64), (4, 2, 4), (3, 5, 3)])
def test_equal_chunks_hold_the_closed_forms_count(p, vpp, m):
    for r in range(p):
        closed = min(m * vpp, p * (vpp + 1) - 2 * r - 1)  # chunks in flight (components.schedule.in_flight x vpp)
        assert held_layers((3,) * vpp, m, p, r) == 3 * closed


def test_unequal_chunks_are_read_off_the_schedule():
    """p = 2, vpp = 2, m = 4, rank 0 with chunks of 3 and 1 layers, worked by hand: 4 warm-up forwards (chunks
    0 0 1 1: 8 layers), then forward chunk 0 (11), backward chunk 1 (10), forward chunk 0 (13: every micro batch's
    chunk 0 and one chunk 1), backward chunk 1 (12), forward chunk 1 (13), ...: the most is 13 layers, where equal
    chunks of 2 would hold 5 x 2 = 10."""
    assert held_layers((3, 1), 4, 2, 0) == 13
    assert held_layers((2, 2), 4, 2, 0) == 10


def test_estimate_places_states_by_rank_and_activations_by_chunk():
    """Llama 3 70B (80 layers): with the embedding and the loss, 82 units do not divide pp 4 x vpp 3 (refused, as
    Megatron-Core asserts); with the loss alone 81 = pp 3 x vpp 3 x 9 units: ranks of 27, 27, 26 layers, the states
    of --stage-layers 27,27,26 (vpp 1) to the byte, the last rank's in-flight layers off the schedule of its 9, 9, 8 chunks."""
    shape = resolve_model("llama3-70b")
    with pytest.raises(ConfigError, match="82 pipeline units"):
        estimate(shape, Training(t=8, p=4, vpp=3, gbs=8, account_embedding=True, account_loss=True))
    training = Training(t=8, p=3, vpp=3, gbs=6, account_loss=True)
    est = estimate(shape, training)
    assert [s["layers"] for s in est.stages] == [27, 27, 26]
    same = estimate(shape, Training(t=8, p=3, gbs=6, stage_layers=(27, 27, 26)))  # states do not depend on vpp
    states = ("weights", "gradients", "optimizer")
    for placed, given in zip(est.stages, same.stages):
        assert {k: placed["bytes"][k] for k in states} == {k: given["bytes"][k] for k in states}
    assert (
        est.stages[2]["in_flight"] == held_layers((9, 9, 8), training.m, 3, 2) / 26 != 7 / 3
    )  # the closed form: 7 chunks / vpp
    assert est.uneven and est.peak == est.most_loaded_stage["bytes"]["total"]


@pytest.mark.parametrize(
    "training,needle",
    [
        (dict(p=2, vpp=2, pipeline_layout="Et*3|t*4L"), "has 1 virtual stages per rank over pp=2, but --vpp 2"),
        (dict(p=2, vpp=1, pipeline_layout="Et*3|t*4L", stage_layers=(3, 4)), "places every layer itself"),
        (dict(p=2, vpp=1, account_loss=True, stage_layers=(3, 4)), "drop --stage-layers"),
        (dict(p=2, vpp=1, pipeline_layout="tEt*3|t*4L"), "E first and the loss L last"),
    ],
)
def test_contradicting_layouts_are_refused_in_one_line(training, needle):
    with pytest.raises(ConfigError, match=needle):
        Training(gbs=4, **training)


def test_a_layout_of_the_wrong_layers_is_refused():
    with pytest.raises(ConfigError, match="places 7 t"):
        estimate(resolve_model("tiny"), Training(p=2, gbs=4, pipeline_layout="Et*3|t*4L"))


def test_a_mixed_models_unequal_chunks_are_held_by_their_bytes():
    """tiny-moe with a dense first layer, layout Ett|t|t|t|t|ttL over p = 2: rank 0 holds chunks of layers {0, 1},
    {3}, {5} (dense + MoE, MoE, MoE). Its activations must be the interleaved schedule's peak (held_layers, worked
    by hand above) over the chunks' bytes of one micro batch, a_d + a_e, a_e, a_e, with a dense layer's a_d and an
    MoE layer's a_e read off two p = 1 estimates (one micro batch: a_d + 7 a_e and 8 a_e); exact to the byte's
    rounding (1e-9). Weighing the chunks by layers alike would give 4 x held_layers((2, 1, 1)) / 4 x the rank's
    mean layer instead."""
    moe = resolve_model("tiny-moe")
    mixed = replace(moe, dense_layers=(0,))
    one = estimate(mixed, Training(gbs=4)).stages[0]["bytes"]["activations"]
    a_e = estimate(moe, Training(gbs=4)).stages[0]["bytes"]["activations"] / 8
    a_d = one - 7 * a_e
    assert a_d != a_e
    layout = "|".join(["Ett"] + ["t"] * (moe.L - 4) + ["ttL"])
    training = Training(p=2, vpp=3, gbs=4, pipeline_layout=layout)
    rank0 = estimate(mixed, training).stages[0]
    expected = held_layers((a_d + a_e, a_e, a_e), training.m, 2, 0)
    assert rank0["bytes"]["activations"] == pytest.approx(expected, rel=1e-9)
    assert rank0["in_flight"] == pytest.approx(expected / (a_d + 3 * a_e), rel=1e-9)
    assert expected != pytest.approx(held_layers((2, 1, 1), training.m, 2, 0) / 4 * (a_d + 3 * a_e), rel=1e-3)


def test_the_combined_1f1b_holds_one_more_warm_up_forward_and_overlaps_layer_by_layer():
    """p = 2, vpp = 2, m = 2, last rank, worked by hand from megatron-core 0.16.1 schedules.py and
    model_chunk_schedule_plan.py: chunk 0 two layers of 1, chunk 1 a layer of 1 and an MTP layer of 2 whose
    post-process (its head and logits) is 1. Interleaved 1F1B warms up 2 forwards (c0 c0: 4), then forward c1 (7),
    backward c1: 7. The combined 1F1B warms up 3 (c0 c0 c1: 7); its one overlapped step frees the backward MTP's
    post-process (6), adds forward layer 0 (7), frees backward MTP's body (6), adds the forward MTP (8): 8."""
    chunks = (((1.0, 0.0), (1.0, 0.0)), ((1.0, 0.0), (2.0, 1.0)))
    assert held_layers((2, 3), 2, 2, 1) == 7
    assert held_combined(chunks, 2, 2, 1) == 8
    assert held_combined((((1.0, 0.0),), ((1.0, 0.0),)), 2, 2, 1) == 4  # one layer a chunk: 1F1B's 3 and one more


def test_one_kinds_chunks_weighed_by_bytes_hold_the_layers_count():
    """held_weighted with each chunk's bytes proportional to its layers is held (one kind: exact)."""
    training = Training(p=2, vpp=3, gbs=8, pipeline_layout="Ett|t|t|t|t|ttL")
    chunks = training.chunks(8)
    weights = tuple(tuple(((3.5, 0.0),) * n for n in c) for c in chunks)
    assert training.held_weighted(weights) == pytest.approx(training.held(8))


def _run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_a_megatron_file_with_accounted_units_under_vpp_gives_the_flags_estimate(tmp_path):
    """The reader states --account-for-* under vpp as the flags: the file and the flags give the same JSON."""
    got, problems = read(
        tmp_path,
        "--num-layers 14 --pipeline-model-parallel-size 4 "
        "--num-virtual-stages-per-pipeline-rank 2 --account-for-embedding-in-pipeline-split "
        "--account-for-loss-in-pipeline-split",
    )
    assert not problems and got == {"vpp": 2, "account_embedding": True, "account_loss": True}
    got, problems = read(
        tmp_path, "--num-layers 6 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Ett|tt|t|tL"
    )
    assert not problems and got == {"vpp": 2, "pipeline_layout": "Ett|tt|t|tL"}
    path = tmp_path / "run.args"
    path.write_text(
        f"{TINY} --num-layers 6 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout "
        "Ett|tt|t|tL --bf16 --use-distributed-optimizer --global-batch-size 8\n"
    )
    code, out, err = _run("estimate", "--megatron", str(path), "--gpus", "2", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["config"]["pipeline_layout"] == "Ett|tt|t|tL" and [s["layers"] for s in report["stages"]] == [3, 3]
    assert report["stages"][0]["in_flight"] == held_layers((2, 1), 8, 2, 0) / 3


def test_the_flags_print_every_rank():
    code, out, err = _run(
        "estimate",
        "--model",
        "tiny",
        "--pp",
        "2",
        "--vpp",
        "2",
        "--gbs",
        "4",
        "--seq",
        "256",
        "--pipeline-layout",
        "Ett|ttt|tt|tL",
    )
    assert code == 0 and "rank" in out and "a pipeline layout the paper's closed form" in out.replace("\n", " "), err


def test_plan_rows_with_accounted_units_are_estimates_exact_peaks():
    """plan with --account-for-embedding/--account-for-loss: every valid row places (L + 2) units over pp x vpp
    (tiny: L = 8, so pp x vpp divides 10), its peak the one `mem4d estimate` gives that row's config, to the byte;
    a row's (p, vpp) whose units do not divide is never listed."""
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search

    shape = resolve_model("tiny")
    cluster = Cluster(shape, gpus=2, s=256, gbs=20, held=(("account_embedding", True), ("account_loss", True)))
    plan = search(cluster, 2**40, zero=(1,), balance=False)
    rows = range(len(plan.rows["d"]))
    assert {(int(plan.rows["p"][i]), int(plan.rows["vpp"][i])) for i in rows} == {(1, 1), (2, 1), (2, 5)}
    for i in [i for i in rows if plan.rows["p"][i] > 1][:6]:
        training = plan.training(i)
        assert training.account_embedding and training.account_loss and training.stage_layers is None
        assert plan.config(i)["peak_bytes"] == estimate(shape, training).peak, plan.config(i)["config"]


def test_plan_leaves_out_unequal_chunks_of_a_model_of_several_kinds():
    """tiny-moe with a dense first layer: accounted units under vpp leave a rank's chunks unequal, which estimate
    weighs by the chunks' bytes (config.layout.held_weighted) and plan's per-row count does not; plan lists no such
    row (pp 2 x vpp 5 stays for the all-MoE model)."""
    from symbolic.plan.enumerate import Cluster
    from symbolic.plan.search import search

    held = (("account_embedding", True), ("account_loss", True))
    for shape, want in (
        (replace(resolve_model("tiny-moe"), dense_layers=(0,)), {(1, 1), (2, 1)}),
        (resolve_model("tiny-moe"), {(1, 1), (2, 1), (2, 5)}),
    ):
        plan = search(Cluster(shape, gpus=2, s=256, gbs=20, held=held), 2**40, zero=(1,), balance=False)
        assert {(int(p), int(v)) for p, v in zip(plan.rows["p"], plan.rows["vpp"])} == want
    est = estimate(
        replace(resolve_model("tiny-moe"), dense_layers=(0,)),
        Training(p=2, vpp=5, gbs=20, account_embedding=True, account_loss=True),
    )
    assert est.uneven and len(est.stages) == 2


def test_a_megatron_file_reads_the_combined_1f1b(tmp_path):
    """--overlap-moe-expert-parallel-comm is read into --ep-overlap (Training.ep_overlap), and without vpp at pp > 1
    it is refused in one line, as megatron-core 0.16.1 transformer_config.py asserts."""
    from symbolic.readers.megatron import read as read_file

    base = (
        "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --seq-length 64 --bf16 "
        "--micro-batch-size 1 --num-experts 4 --expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall "
        "--pipeline-model-parallel-size 2 --overlap-moe-expert-parallel-comm --disable-bias-linear"
    )
    path = tmp_path / "args.txt"
    path.write_text(base + " --num-layers-per-virtual-pipeline-stage 1\n")
    assert read_file(path).training["ep_overlap"] is True
    path.write_text(base + "\n")
    code, _, err = _run("estimate", "--megatron", str(path), "--gpus", "4")
    assert code == 2 and "the combined 1F1B" in err and err.count("\n") == 1
