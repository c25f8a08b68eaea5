"""Pipeline stages holding different layers (a dense-first MoE model at p > 1, uneven stages): one program per stage
kind.

Sources of truth: Training.kind_layers (the layers each rank of the real model holds, as the symbolic side counts
them) for the stage programs' models; the rule table's one-line errors; XLA's memory_analysis() for verify's
programs (argument bytes exact, 0 bytes tolerance; the reported program the one with the largest XLA total). That
each program's step equals its unsharded reference is tests/test_jax_moe.py's STAGED case.
"""

import pytest

from conftest import skip_if_not_enough_devices
from symbolic.config.errors import BrokenRule, ConfigError
from symbolic.config.shapes import ModelShape
from symbolic.config.training import Training

# DeepSeek-V3's layout scaled down: the first three of eight layers dense (first_k_dense_replace = 3)
V3_LIKE = ModelShape(
    "t-v3",
    h=64,
    f=176,
    a=4,
    k=2,
    L=8,
    v=256,
    E=8,
    k_e=2,
    f_e=48,
    dense_layers=(0, 1, 2),
    sigmoid=True,
    expert_bias=True,
    groups=2,
    group_topk=1,
)
# the first of four layers dense: at p = 2 stage 0 holds a dense and an MoE layer, stage 1 two MoE layers
DENSE_FIRST = ModelShape(**{**V3_LIKE.as_dict(), "name": "t-df", "L": 4, "dense_layers": (0,)})


def _kinds(shape: ModelShape, p: int, rank: int) -> dict:
    return Training(p=p).kind_layers(shape)[rank]


@pytest.mark.parametrize("p, split", [(1, None), (2, None), (2, (5, 3)), (3, (4, 2, 2))])
def test_each_program_gives_every_stage_the_layers_of_its_ranks(p, split):
    """p = 1 (or stages alike): one program, the configuration itself; else one per distinct stage (uneven ones
    too: Training.stage_layers), even, whose every rank holds exactly the real model's layers of those ranks (as many,
    as many MoE layers; dense first in each)."""
    from jaxcheck.stages import alike, stage_programs

    train = Training(p=p, stage_layers=split)
    programs = stage_programs(V3_LIKE, train)
    if p == 1:
        assert programs == (((0,), V3_LIKE, train),)
        return
    real = train.kind_layers(V3_LIKE)
    assert sorted(r for ranks, _, _ in programs for r in ranks) == list(range(p))
    for ranks, shape, one in programs:
        assert alike(shape, p) and one.stage_layers is None and shape.L == p * train.layers(V3_LIKE.L)[ranks[0]]
        for q in range(p):
            assert _kinds(shape, p, q) == real[ranks[0]]
    first = programs[0][1]
    assert first.dense_layers == tuple(q * (first.L // p) + j for q in range(p) for j in range(3))


def test_an_even_split_spelled_out_is_the_model_itself():
    """--stage-layers 4,4 of an 8-layer model at p = 2: one program, the model itself, its training without the split
    (which the jax profile alone refuses)."""
    from jaxcheck.stages import stage_programs

    dense = ModelShape("t-dense", h=64, f=176, a=4, k=2, L=8, v=256)
    ((ranks, shape, train),) = stage_programs(dense, Training(p=2, stage_layers=(4, 4)))
    assert (ranks, shape, train.stage_layers) == ((0, 1), dense, None)
    from jaxcheck.spec import StepSpec

    ((_, spec),) = StepSpec(dense, Training(p=2, stage_layers=(4, 4))).check().stages()
    assert spec.train.stage_layers is None and spec.shape == dense


def test_uneven_stages_of_a_dense_model_compile_one_program_per_layer_count():
    """A dense model split 3 + 1 + 1 + 3 over p = 4: programs of 3 and 1 layers a stage, ranks grouped by count."""
    from jaxcheck.stages import stage_programs

    dense = ModelShape("t-dense", h=64, f=176, a=4, k=2, L=8, v=256)
    programs = stage_programs(dense, Training(p=4, stage_layers=(3, 1, 1, 3)))
    assert [(ranks, shape.L, shape.name) for ranks, shape, _ in programs] == [
        ((0, 3), 12, "t-dense ranks 0,3"),
        ((1, 2), 4, "t-dense ranks 1,2"),
    ]


def test_a_stage_of_dense_layers_only_is_refused_in_one_line():
    from jaxcheck.stages import stage_programs

    with pytest.raises(ConfigError) as err:
        stage_programs(V3_LIKE, Training(p=4))  # rank 0 holds layers 0 and 1, both dense
    assert "rank 0 holds dense layers only" in str(err.value) and "\n" not in str(err.value)


def test_stages_alike_compile_as_one_program():
    """Dense layers first in every stage (layers 0 and 4 of eight at p = 2): one program, the model itself."""
    from jaxcheck.stages import stage_programs

    shape = ModelShape(**{**V3_LIKE.as_dict(), "name": "alike", "dense_layers": (0, 4)})
    train = Training(p=2)
    assert stage_programs(shape, train) == (((0, 1), shape, train),)


def test_the_spec_splits_what_one_program_cannot_build():
    """At p = 2 the jax profile alone refuses the real model (its stacks would be an average of the stages), the
    spec checks each program's model, and compile_step refuses the real model in one line (verify splits it)."""
    import jax

    from jaxcheck.compile import compile_step
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec

    train = Training(d=2, ep=2, p=2, s=64, gbs=4)
    with pytest.raises(BrokenRule) as err:
        train.check(DENSE_FIRST, "jax")
    assert err.value.rule == "mixed layers: stages alike, dense first (jax)"
    spec = StepSpec(DENSE_FIRST, train).check()
    assert [ranks for ranks, _ in spec.stages()] == [(0,), (1,)]
    skip_if_not_enough_devices(train.world)
    with pytest.raises(ConfigError) as err:
        compile_step(spec, make_mesh(train, jax.devices()[: train.world]))
    assert "stages hold different layers" in str(err.value) and "\n" not in str(err.value)


# a Qwen2-MoE config.json whose first layer is dense (mlp_only_layers) and the job both tests below compile at p = 2:
# the same two stage programs, compiled once per session (conftest's compilation cache)
DENSE_FIRST_JSON = {
    "_name_or_path": "t-q2moe-df",
    "model_type": "qwen2_moe",
    "hidden_size": 64,
    "intermediate_size": 176,
    "moe_intermediate_size": 48,
    "shared_expert_intermediate_size": 80,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 4,
    "vocab_size": 256,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [0],
    "tie_word_embeddings": False,
}
STAGED_JOB = ["--dp", "2", "--ep", "2", "--pp", "2", "--seq", "64", "--gbs", "4", "--recompute", "none", "--zero", "1"]


@pytest.fixture(scope="module")
def dense_first_json(tmp_path_factory):
    import json

    path = tmp_path_factory.mktemp("stages") / "config.json"
    path.write_text(json.dumps(DENSE_FIRST_JSON))
    return path


def test_verify_compiles_every_stage_program_and_reports_the_largest(dense_first_json):
    """XLA:CPU, d2 e2 p2: two programs; the object is the one whose XLA total is the largest, under the real model's
    name, its argument bytes equal to the profile's (exact); "stages" lists both with their layers."""
    from jaxcheck.crosscheck.verify import verify
    from jaxcheck.targets import load
    from symbolic.config.hfconfig import resolve_model

    train = Training(d=2, ep=2, p=2, s=64, gbs=4, recompute="none", zero=1)
    skip_if_not_enough_devices(train.world)
    out = verify(resolve_model(str(dense_first_json)), train, target=load("cpu"))
    stages = out["stages"]
    assert [(s["ranks"], s["dense_layers"], s["moe_layers"]) for s in stages] == [([0], 1, 1), ([1], 0, 2)]
    assert out["model"] == "t-q2moe-df" and out["xla"]["total_bytes"] == max(s["xla_total"] for s in stages)
    assert out["stage_model"] == (
        "t-q2moe-df ranks 0" if stages[0]["xla_total"] >= stages[1]["xla_total"] else "t-q2moe-df ranks 1"
    )
    rows = {row["name"]: row for row in out["components"]}
    for part in ("params", "optimizer", "batch", "argument"):
        assert rows[part]["symbolic"] == rows[part]["xla"], part


def test_compile_cli_compiles_every_stage_program(capsys, dense_first_json):
    """`mem4d compile --json --target cpu` of the config.json above at p = 2: the object of the program with the
    largest XLA total, under the real model's name, "stages" listing both programs' totals (fits: none on XLA:CPU,
    which has no card); in this process (the `mem4d` entry point)."""
    import json

    from symbolic.cli.entry import main

    skip_if_not_enough_devices(8)
    rc = main(["compile", "--model", str(dense_first_json), *STAGED_JOB, "--target", "cpu", "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    out = json.loads(captured.out)
    stages = out["stages"]
    assert [(s["ranks"], s["dense_layers"], s["moe_layers"], s["fits"]) for s in stages] == [
        ([0], 1, 1, None),
        ([1], 0, 2, None),
    ]
    assert out["model"] == "t-q2moe-df" and out["xla"]["total_bytes"] == max(s["total_bytes"] for s in stages)
    assert out["stage_model"].startswith("t-q2moe-df ranks ")


@pytest.mark.parametrize("p", [1, 2])
def test_explains_doubled_model_keeps_every_stage_alike(p):
    """verify --explain's per-layer variant (2L layers) of a stage program: each stage twice its layers, dense ones
    doubled and first, so it compiles as one program too (at first it split, and --explain exited 2)."""
    from jaxcheck.stages import alike, doubled, stage_programs

    for _, shape, _ in stage_programs(V3_LIKE, Training(p=p)):
        twice = doubled(shape, p)
        assert twice.L == 2 * shape.L and alike(twice, p)
        assert len(twice.dense_layers) == 2 * len(shape.dense_layers)


def test_a_hybrid_whose_stages_hold_different_counts_compiles_one_program_per_count():
    """Qwen3-Next's pattern (three Gated DeltaNet layers, then attention) over 12 layers at p = 2: rank 0 holds five
    Gated DeltaNet layers and one attention layer, rank 1 four and two; each program's every stage holds its ranks'
    counts, Gated DeltaNet layers first; at p = 4 (one period a stage) the model itself; a stage of one kind only is
    refused in one line."""
    from jaxcheck.spec import StepSpec
    from jaxcheck.stages import alike, stage_programs

    hybrid = ModelShape(
        "t-hybrid",
        h=64,
        f=176,
        a=4,
        k=2,
        L=12,
        v=256,
        qk_norm="head",
        attn_gate=True,
        linear_layers=(0, 1, 2, 4, 5, 6, 8, 9, 10),
        lin_k_heads=2,
        lin_v_heads=4,
        lin_k_dim=16,
        lin_v_dim=16,
        conv_width=4,
    )
    programs = stage_programs(hybrid, Training(p=2))
    assert [(ranks, shape.L, shape.linear_layers) for ranks, shape, _ in programs] == [
        ((0,), 12, (0, 1, 2, 3, 4, 6, 7, 8, 9, 10)),
        ((1,), 12, (0, 1, 2, 3, 6, 7, 8, 9)),
    ]
    assert all(alike(shape, 2) for _, shape, _ in programs)
    assert [len(spec.shape.linear_layers) for _, spec in StepSpec(hybrid, Training(p=2, s=64)).check().stages()] == [
        10,
        8,
    ]
    assert stage_programs(hybrid, Training(p=3)) == (((0, 1, 2), hybrid, Training(p=3)),)
    with pytest.raises(ConfigError) as err:
        stage_programs(hybrid, Training(p=6))  # rank 0 holds layers 0 and 1, both Gated DeltaNet
    assert "rank 0 holds Gated DeltaNet layers only" in str(err.value) and "\n" not in str(err.value)
