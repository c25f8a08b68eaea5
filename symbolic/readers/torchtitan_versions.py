"""`--torchtitan-version V`: which torchtitan a --torchtitan run used. mem4d's torchtitan recipe reads 9dec370's
TransformerBlock (2024-12, the H100 benchmark's); each other version here was read by running its own block on the
CPU under saved-tensor hooks (benchmarks/titan_versions.py, records/titan-versions-cpu.jsonl); a version not read is
refused in one line. What a read version's block saves unlike 9dec370's is said in a note beside the estimate."""

from __future__ import annotations

from ..config.errors import ConfigError

DEFAULT = "9dec370"
# torchtitan 0.1.0 models/llama3/model/model.py, 0.2.2 the same file, 0.3.0 models/common/nn_modules.py RMSNorm(nn.RMSNorm):
# the norms are torch's nn.RMSNorm (F.rms_norm), not 9dec370's Python RMSNorm (models/norms.py); the rest of the
# block (wq/wk/wv or 0.3.0's fused wqkv, complex RoPE, SDPA, SwiGLU FFN, residuals) saves the same tensors.
_NORM = (
    "its attention and ffn norms are torch's nn.RMSNorm (F.rms_norm) instead of 9dec370's Python RMSNorm: on the "
    "CPU (torch 2.13) each keeps its normalised value in fp32, not bf16 (+4 h bytes a token a block, "
    "records/titan-versions-cpu.jsonl); on CUDA rms_norm may run torch's fused kernel, which saves the input and "
    "the fp32 rstd only; mem4d counts 9dec370's norm tensors (the one difference the listing shows)"
)
VERSIONS = {
    "9dec370": ("2024-12-26, the H100 benchmark's; what the recipe reads", None),
    "0.1.0": ("2025-06-18 (the 2025 release)", _NORM),
    "0.2.2": ("2026-02-20 (whose job config --torchtitan reads)", _NORM),
    "0.3.0": ("2026-09-03", _NORM + "; 0.3.0's fused wqkv keeps the same norm output for its one matmul"),
}


def version_notes(version: str | None) -> list[str]:
    """The notes for a run on `version` (None: 9dec370, what the recipe reads); ConfigError for a version not read."""
    if version is None or version == DEFAULT:
        return []
    if version not in VERSIONS:
        raise ConfigError(
            f"--torchtitan-version {version}: mem4d read torchtitan {', '.join(VERSIONS)} (what each "
            "block saves: records/titan-versions-cpu.jsonl); other versions are not read"
        )
    date, difference = VERSIONS[version]
    return [f"torchtitan {version} ({date}): {difference}"] if difference else []
