"""--moe-grouped-gemm under Transformer Engine: the experts' GroupedLinear GEMMs keep cuBLAS workspaces of their own.

Source of truth: transformer-engine 2.9.0 pytorch/module/grouped_linear.py:176 (and :368, :415) passes
get_multi_stream_cublas_workspace() to general_grouped_gemm; module/base.py:95-103 allocates it once, with torch.empty in
PyTorch's pool, tex.get_num_cublas_streams() tensors of get_cublas_workspace_size_bytes() (32 MiB + 1 KiB from sm90);
common/util/multi_stream.cpp get_num_compute_streams returns 4. Megatron-Core builds TEGroupedMLP from
--moe-grouped-gemm with --transformer-impl transformer_engine. Exact: 4 x 32 MiB, mem4d's workspace constant."""

from megatron_args import read_lines, small_gpt

from symbolic.cli.entry import main
from symbolic.components.overheads import overheads
from symbolic.config.switches import Switches

ARGS = small_gpt(
    "--bf16 --micro-batch-size 1 --num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 48 --disable-bias-linear"
)


def _names(sw: Switches, megatron: bool = True) -> dict:
    return {p.name: p.expr for p in overheads(1, 1, sw, megatron=megatron)}


def test_four_workspaces_of_32_mib_with_grouped_experts_only():
    assert _names(Switches(moe=True, grouped_gemm=True))["grouped_gemm_workspaces"] == 4 * 32 * 2**20
    assert "grouped_gemm_workspaces" not in _names(Switches(moe=True))
    assert "grouped_gemm_workspaces" not in _names(Switches(moe=False, grouped_gemm=True))
    assert "grouped_gemm_workspaces" not in _names(Switches(moe=True, grouped_gemm=True, local=True))
    assert "grouped_gemm_workspaces" not in _names(Switches(moe=True, grouped_gemm=True), megatron=False)


def test_the_reader_sets_it_only_where_tegroupedmlp_runs(tmp_path):
    for extra, want in (
        ("--moe-grouped-gemm\n", True),
        ("", False),
        ("--moe-grouped-gemm --transformer-impl local\n", False),
    ):
        assert read_lines(tmp_path, ARGS, extra).training["moe_grouped_gemm"] is want, extra


def test_the_flag_outside_megatron_is_one_line(capsys):
    assert main(["estimate", "--model", "tiny-moe", "--recipe", "torchtitan", "--moe-grouped-gemm"]) == 2
    assert "--moe-grouped-gemm is Megatron-Core's TEGroupedMLP" in capsys.readouterr().err
