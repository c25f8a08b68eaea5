"""`--megatron FILE`, `--gpus`, `--rank`: Megatron-LM's arguments read into mem4d's ModelShape and Training.

Sources of truth: Megatron-LM's own parser (../shared/data/trainers/megatron-lm-arguments.tsv, 838 arguments at
d98e8a64), the 22 functional-test cases in ../shared/data/measured/megatron with the sizes RUNS.md lists for them, and
mem4d's own flags (a file must give exactly the estimate those flags give). Exact: no tolerance."""

import csv
import json
import re
from pathlib import Path

import pytest

from model_files import assert_same_answer, run

from symbolic.readers import megatron, megatron_buffers, megatron_fp8, megatron_model, megatron_stages, megatron_train
from symbolic.readers.megatron import collect
from symbolic.readers.megatron_model import model_fields
from symbolic.readers.megatron_table import CLASSES, table
from symbolic.readers.megatron_train import training_flags

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
CASES = sorted(p for p in (SHARED / "measured" / "megatron").glob("*.model_config.yaml") if ".at_" not in p.name)
EXAMPLE = ROOT / "grids" / "megatron" / "llama-1b.args"
TINY = (
    "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --max-position-embeddings 128 "
    "--seq-length 128 --micro-batch-size 1"
)  # a model and batch Megatron-LM accepts


def refused(argv, *needles) -> str:
    code, out, err = run(*argv)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, err)
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/data is absent (the argument list lives there)")
def test_the_table_classifies_every_argument_of_megatron_lms_parser():
    with open(SHARED / "trainers" / "megatron-lm-arguments.tsv", newline="") as file:
        rows = list(csv.DictReader(file, delimiter="\t"))
    assert len(rows) == 838
    for row in rows:
        arg = table()[row["flags"].split()[0]]
        assert (arg.dest, arg.default, arg.action) == (row["dest"], row["default"], row["action"]), row["flags"]
        assert arg.cls in CLASSES and arg.reason, row["flags"]


def test_every_modelled_argument_is_read_by_the_reader():
    source = "".join(
        Path(module.__file__).read_text()
        for module in (megatron, megatron_model, megatron_stages, megatron_train, megatron_fp8, megatron_buffers)
    )
    read = set(re.findall(r'"([a-z0-9_]+)"', source))
    unread = sorted({arg.dest for arg in table().values() if arg.cls in ("model", "train")} - read)
    assert not unread


LLAMA_1B = {
    "_name_or_path": "llama-1b",
    "model_type": "llama",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 16,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "rope_theta": 500000.0,
}  # the example's model as a config.json


def test_a_launch_script_gives_the_estimate_of_the_same_flags(tmp_path):
    """The example file and the same run stated with mem4d's own flags (its model as a config.json) print the same
    JSON byte for byte: every component, stage, memory figure and verdict, beside the file's own note."""
    code, out, err = run("estimate", "--megatron", str(EXAMPLE), "--gpus", "16", "--json")
    assert code == 0, err
    mine = json.loads(out)
    assert mine.pop("megatron") == {"file": str(EXAMPLE), "overridden": []}
    config = tmp_path / "llama-1b.json"
    config.write_text(json.dumps(LLAMA_1B))
    layout = "--tp 2 --pp 2 --dp 4 --seq 4096 --mbs 1 --gbs 64 --zero 1 --recompute selective --swiglu-fusion"
    assert_same_answer(mine, "estimate", "--model", str(config), *layout.split())
    assert mine["config"]["sp"] and mine["shape"]["v"] == 128256 and not mine["shape"].get("tied", False)


def test_flags_beside_the_file_override_it_and_say_so():
    code, out, err = run("estimate", "--megatron", str(EXAMPLE), "--gpus", "16", "--tp", "4", "--json")
    report = json.loads(out)
    assert code == 0 and report["config"]["tp"] == 4 and report["config"]["dp"] == 2, err
    assert report["megatron"]["overridden"] == ["--tp 4 from the command line (the file: 2)"]


@pytest.mark.parametrize(
    "flags,config,note",
    [
        (["--tp", "1"], {"tp": 1, "dp": 8}, "--tp 1 from the command line (the file: 2)"),  # a flag at its default
        (["--no-dist-opt"], {"zero": 0, "dp": 4}, "--zero 0 from the command line (the file: 1)"),  # an alias's dest
    ],
)
def test_a_flag_given_at_its_own_default_still_overrides_the_file(flags, config, note):
    code, out, err = run("estimate", "--megatron", str(EXAMPLE), "--gpus", "16", *flags, "--json")
    report = json.loads(out)
    assert code == 0 and {key: report["config"][key] for key in config} == config, err
    assert report["megatron"]["overridden"] == [note]


def test_without_a_global_batch_megatron_lm_runs_one_micro_batch_per_step(tmp_path):
    """arguments.py: global_batch_size = micro_batch_size x data-parallel size where it is not given."""
    path = tmp_path / "run.args"
    path.write_text(EXAMPLE.read_text().replace("--global-batch-size 64", ""))
    code, out, err = run("estimate", "--megatron", str(path), "--gpus", "16", "--json")
    assert code == 0, err
    config = json.loads(out)["config"]
    assert (config["gbs"], config["m"], config["pp"]) == (4, 1, 2)


def test_rank_last_names_the_last_stage_and_its_memory():
    code, out, err = run("estimate", "--megatron", str(EXAMPLE), "--gpus", "16", "--rank", "last", "--json")
    assert code == 0, err
    report = json.loads(out)
    last = next(s for s in report["stages"] if s["rank"] == 1)
    assert report["rank"] == {"rank": 15, "pipeline_rank": 1, "stage": "last", "memory": last["memory"]}
    assert last["memory"]["device_bytes"] == last["bytes"]["total"]
    assert last["memory"]["allocated_bytes"] <= last["memory"]["reserved_bytes"] <= last["memory"]["device_bytes"]


@pytest.mark.parametrize(
    "text,needles",
    [
        ("--num-layers 2 --no-such-flag 3\n", ["--no-such-flag (not an argument"]),
        ("--num-layers 2 --num-layers 3\n", ["--num-layers (sets num_layers again"]),
        ("--num-layers two\n", ["--num-layers takes an integer"]),
        (
            "--bf16 --fp16 --num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128\n",
            ["--fp16 (contradicts --bf16)"],
        ),
        (
            "--num-query-groups 2 --num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128\n",
            ["--num-query-groups 2 (without --group-query-attention"],
        ),
        (
            f"{TINY} --cuda-graph-impl local --optimizer-cpu-offload --rl-prompts-per-eval 4\n",
            ["3 arguments", "--cuda-graph-impl", "--optimizer-cpu-offload", "--rl-prompts-per-eval"],
        ),
        (
            "--yarn-correction-range-round-to-int --no-yarn-correction-range-round-to-int\n",
            ["--no-yarn-correction-range-round-to-int (sets yarn_correction_range_round_to_int again"],
        ),  # two spellings
        ("--bf16 yes\n", ["--bf16 is a switch"]),
        (
            f"{TINY} --tensor-model-parallel-size 0\n",
            ["1 argument", "--tensor-model-parallel-size 0 (must be a positive"],
        ),
        (
            "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --vocab-size 128\n",
            ["2 arguments", "--seq-length (not given", "--micro-batch-size (not given"],
        ),
        ("--recompute-method block\n", ["--recompute-method block (without --recompute-granularity"]),
        (
            f"{TINY} --bf16 --use-torch-fsdp2\n",
            ["1 argument", "--use-torch-fsdp2 (torch FSDP2's fully_shard prefetches one layer"],
        ),  # --zero 3 under Megatron-LM is Megatron-FSDP's window
        ("pretrain_gpt.py --num-layers 2\n", ["is no --flag"]),
        ("--num-layers 'unclosed\n", ["malformed arguments"]),
    ],
)
def test_bad_argument_files_are_refused_in_one_line(tmp_path, text, needles):
    path = tmp_path / "run.args"
    path.write_text(text)
    refused(["estimate", "--megatron", str(path), "--gpus", "8"], *needles)


def test_a_yaml_key_given_twice_and_malformed_yaml_are_refused(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("MODEL_ARGS:\n  --num-layers: 2\n  --num-layers: 4\n")
    refused(["estimate", "--megatron", str(path), "--gpus", "8"], "--num-layers given twice")
    path.write_text("MODEL_ARGS: [\n")
    refused(["estimate", "--megatron", str(path), "--gpus", "8"], "malformed YAML")
    path.write_text("MODEL_ARGS:\n  --num-layers: [1, 2]\n")
    refused(["estimate", "--megatron", str(path), "--gpus", "8"], "--num-layers takes one value, got 2")


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--gpus", "10"], "--gpus 10 is not a multiple of tp x pp x cp = 2 x 2 x 1 = 4"),
        (["--gpus", "16", "--dp", "4"], "--gpus 16 and --dp 4 both set"),
        ([], "give --gpus N"),
        (["--gpus", "16", "--rank", "16"], "--rank 16: the job has ranks 0 to 15"),
        (["--gpus", "16", "--recipe", "torchtitan"], "--recipe/--profile torchtitan conflicts"),
    ],
)
def test_gpus_and_rank_are_checked(argv, needle):
    refused(["estimate", "--megatron", str(EXAMPLE), *argv], needle)


def test_gpus_without_a_file_sets_dp():
    code, out, _ = run("estimate", "--model", "llama3-8b", "--tp", "2", "--gpus", "8", "--json")
    assert code == 0 and json.loads(out)["config"]["dp"] == 4


def _runs() -> dict[str, dict]:
    """RUNS.md's summary table: case -> {L, h, E, k_e, tp, pp, cp, ep, etp}."""
    out = {}
    for line in (SHARED / "measured" / "RUNS.md").read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 5 and cells[1].startswith("MB-"):
            model, par = cells[3], cells[4]
            sizes = {key: int(value) for key, value in re.findall(r"\b(tp|pp|cp|ep|etp)(\d+)", par)}
            sizes.update({key: int(value) for key, value in re.findall(r"\b(L|h|E)(\d+)", model)})
            sizes["k_e"] = int(re.search(r"\bk(\d+)", model).group(1)) if "E" in sizes else 0
            out[cells[2]] = sizes
    return out


@pytest.mark.skipif(not CASES, reason="../shared/data/measured/megatron is absent")
@pytest.mark.parametrize("path", CASES, ids=[p.name.split(".")[0] for p in CASES])
def test_each_measured_case_is_read_as_runs_md_lists_it(path):
    """The parallel sizes and the model's L, h, E, k_e, as RUNS.md lists them; then estimate answers or refuses in
    one line naming what it does not model."""
    want = _runs()[path.name.split("__", 1)[1].split(".")[0]]
    args = collect(path)
    training = training_flags(args)
    model = model_fields(args, training)
    got = {
        "tp": training["tp"],
        "pp": training["pp"],
        "cp": training["cp"],
        "ep": training["ep"],
        "etp": training["etp"] or training["tp"],
        "L": model["L"],
        "h": model["h"],
        "E": model.get("E", 0),
        "k_e": model.get("k_e", 0),
    }
    assert got == {key: want.get(key, 0) for key in got}
    code, _, err = run(
        "estimate",
        "--megatron",
        str(path),
        "--gpus",
        "64" if "release" in path.name else "8",
        "--rank",
        "last",
        "--json",
    )
    assert code == 0 or (code == 2 and err.count("\n") == 1 and "error:" in err), err
