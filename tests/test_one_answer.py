"""One answer for one GPU: at p = 1 the paper profile's "most loaded GPU" and the only exact stage hold the same
weights; `--recompute selective` under flash attention is said to cost what `none` does, exactly where it does.

Source of truth: Megatron-LM places the final norm and LM head on the last stage, which at p = 1 is the only one
(exact integer bytes); selective recompute of core_attn drops the s x s scores flash attention never stores (the two
estimates' bytes compared exactly). Run in-process through the CLI (symbolic.cli.entry.main).
"""

import json

import pytest

from symbolic.cli.entry import main


def _estimate(capsys, *argv: str) -> dict:
    assert main(["estimate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_70b_on_one_gpu_has_one_weights_figure(capsys):
    report = _estimate(capsys, "--model", "llama3-70b", "--seq", "4096", "--gbs", "8")
    only = report["stages"][0]
    assert only["stage"] == "only" and report["config"]["pp"] == 1
    for part in ("weights", "gradients", "optimizer"):  # 131.42 GiB of weights in both columns (129.46 before)
        assert report["bytes"][part] == only["bytes"][part], part


@pytest.mark.parametrize(
    "model, flags",
    [
        ("llama3-8b", ()),
        ("mixtral-8x7b", ("--ep", "8", "--dp", "8")),
        ("llama3-8b", ("--no-flash-attn",)),
        ("llama3-8b", ("--recompute-modules", "core_attn,layernorm")),
    ],
)
def test_the_selective_note_is_printed_exactly_where_it_saves_nothing(capsys, model, flags):
    run = ["--model", model, "--tp", "2", "--seq", "4096", "--gbs", "64", *flags]
    selective = _estimate(capsys, *run, "--recompute", "selective")["bytes"]["activations"]
    none = _estimate(
        capsys, *[f for f in run if f not in ("--recompute-modules", "core_attn,layernorm")], "--recompute", "none"
    )["bytes"]["activations"]
    assert main(["estimate", *run, "--recompute", "selective"]) == 0
    noted = "the same bytes as --recompute none" in " ".join(capsys.readouterr().out.split())
    assert noted == (selective == none), (selective, none)
