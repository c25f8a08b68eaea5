"""GPU cards as data: dense peaks, HBM and NVLink bandwidth (copied from ../shared/data/hardware/CARDS.tsv with its
sources) and the achieved GEMM and attention throughput the step-time model divides FLOPs by (GEMM.md's rows)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..config.errors import ConfigError
from .gemm import FAMILY

# the compute capabilities: NVIDIA's CUDA GPUs table (developer.nvidia.com/cuda-gpus: A100 8.0, H100 and H200 9.0,
# B200 and GB200 10.0, B300 and GB300 10.3); jaxcheck/targets' cuda_compute_capability agrees (tests/test_cards.py)
DEFAULT_CARD = "h100-80gb"  # the card a job runs on when none is named (--gpu), as time.systems.default_system
ME_ACC = "stas00/ml-engineering@744d01e1 compute/accelerator/README.md"
MAMF = f"{ME_ACC}:344-376 (MAMF: torch matmul, best shape)"


@dataclass(frozen=True)
class Card:
    """One GPU: dense TFLOP/s peaks (NVIDIA's headline figures are often 2x, with sparsity), HBM TB/s, NVLink GB/s
    per GPU (both directions), and the measured TFLOP/s a GEMM (bf16, fp8, fp4) and causal attention reach on it."""

    name: str
    label: str
    bf16: float  # dense BF16 peak, TFLOP/s
    fp8: float  # dense FP8 peak, TFLOP/s (0: no FP8)
    fp4: float  # dense FP4 peak, TFLOP/s (0: no FP4)
    hbm: float  # HBM bandwidth, TB/s
    nvlink: float  # NVLink bandwidth per GPU, GB/s both directions
    gemm_bf16: float  # achieved BF16 GEMM, TFLOP/s
    gemm_fp8: float  # achieved FP8 GEMM, TFLOP/s (0: no FP8)
    attn: float  # achieved causal attention forward+backward, TFLOP/s (head width 128, 8K tokens)
    peaks_source: str
    gemm_source: str
    attn_source: str
    capability: tuple[int, int]  # CUDA compute capability (major, minor): what the kernels' libraries size by
    hbm_copy: float = 0.0  # measured HBM copy bandwidth (read + write), TB/s (0: none published, the peak stands)
    gemm_fp4: float = 0.0  # achieved NVFP4 GEMM, TFLOP/s (0: no FP4; GEMM_FP4)

    @property
    def attn_cudnn(self) -> float:
        """Achieved causal attention forward+backward under cuDNN's fused attention, TFLOP/s (CUDNN_SHARE)."""
        return self.attn * CUDNN_SHARE.get(FAMILY.get(self.name, ""), 1.0)

    @property
    def hbm_rate(self) -> float:
        """HBM TB/s a memory-bound kernel reaches: the measured copy bandwidth where one is published, else the peak."""
        return self.hbm_copy or self.hbm

    def peak(self, precision: str) -> float:
        """Dense peak TFLOP/s of the precision the linear layers run in ("bf16", "fp8" or "fp4")."""
        value = {"fp8": self.fp8, "fp4": self.fp4}.get(precision, self.bf16)
        if not value:
            raise ConfigError(f"{self.label} has no {precision.upper()} tensor cores: drop --fp8 for it")
        return value

    def gemm(self, precision: str) -> float:
        """Achieved GEMM TFLOP/s of the precision the linear layers run in."""
        self.peak(precision)
        return {"fp8": self.gemm_fp8, "fp4": self.gemm_fp4}.get(precision, self.gemm_bf16)


_FA2_A100 = (
    "Dao-AILab/flash-attention@0251105a assets/flash2_a100_fwd_bwd_benchmark.png (GEMM.md 5b: causal, hd 128, 8k)"
)
_FA_H100 = (
    "FA2 fwd+bwd causal hd 128 at 8k, 308 TFLOP/s (GEMM.md 5a) x 1.5, the lower end of FA3's stated 1.5-1.75x "
    "backward / 1.5-2.0x forward speed-up over FA2 (arXiv:2407.08608; GEMM.md 5c) = 462"
)
_FA4 = (
    "FlashAttention-4 'up to 1613 TFLOPs/s' on B200 BF16 (GEMM.md 5d; an upper figure, the forward's), taken forward "
    "+ backward with FlashAttention-2's backward at 63/73 of its forward rate (arXiv:2307.08691 sec. 1: up to 73 % "
    "of the peak forward, 63 % backward; A100) = 1449"
)
# FlashAttention counts the backward as 2.5x the forward's FLOPs (GEMM.md 5); a forward-only figure R_f stands for
# forward + backward as 3.5 / (1/R_f + 2.5/(BWD_OVER_FWD R_f)), the backward at FA2's published share of the forward
BWD_OVER_FWD = 63 / 73


def fwd_bwd(forward: float) -> float:
    """Forward + backward TFLOP/s of attention whose forward reaches `forward` (BWD_OVER_FWD), one decimal."""
    return round(3.5 / (1 / forward + 2.5 / (BWD_OVER_FWD * forward)), 1)


FA4_B200 = fwd_bwd(1613)  # the Blackwell cards' attention figure (_FA4)
_CARDS_TSV = "../shared/data/hardware/CARDS.tsv row"
# cuDNN's fused attention (TE runs it where FlashAttention cannot: learned softmax sinks, TE 2.9.0 pytorch/attention/
# dot_product_attention/utils.py:694-696) over FlashAttention's figure above: Hopper 600 / 646 TFLOP/s, cuDNN beside
# FA3 at head width 128, 8k, forward (FA3 paper Fig. 5, GEMM.md 5c; no causal cuDNN row); Blackwell 1 / 1.3, FA4's
# "up to 1.3x faster than cuDNN 9.13" (GEMM.md 5d); A100: none published, taken as fast (assumed)
CUDNN_SHARE = {"h100": 600 / 646, "h200": 600 / 646, "blackwell": 1 / 1.3}  # by gemm.FAMILY
# STREAM-like copy bandwidth, TB/s (GEMM.md 2: Azure/AI-benchmarking-guide@8fd0c6e1 ND_A100_v4 (A100-SXM4-80GB),
# ND_H100_v5, ND_H200_v5 results; no Blackwell figure is published there)
HBM_COPY = {"a100-80gb": 1.61, "h100-80gb": 2.90, "h200-141gb": 4.01}

_CARDS: dict[str, Card] = {
    c.name: c
    for c in (
        Card(
            "a100-40gb",
            "A100 SXM4 40GB",
            312,
            0,
            0,
            1.555,
            600,
            271.2,
            0,
            182,
            f"{_CARDS_TSV} 'A100 SXM4 40GB' ({ME_ACC}:135-142,275; glennklockwood.com/garden/processors/A100)",
            f"{MAMF}: A100 SXM 271.2",
            _FA2_A100,
            capability=(8, 0),
        ),
        Card(
            "a100-80gb",
            "A100 SXM4 80GB",
            312,
            0,
            0,
            2.039,
            600,
            271.2,
            0,
            182,
            f"{_CARDS_TSV} 'A100 SXM4 80GB' ({ME_ACC}:275,485)",
            f"{MAMF}: A100 SXM 271.2",
            _FA2_A100,
            capability=(8, 0),
        ),
        Card(
            "h100-80gb",
            "H100 SXM5 80GB",
            989,
            1979,
            0,
            3.35,
            900,
            794.5,
            1402.6,
            462,
            f"{_CARDS_TSV} 'H100 SXM5 80GB' ({ME_ACC}:265; datasheet halved: '* Shown with sparsity')",
            f"{MAMF}: H100 SXM bf16 794.5, fp8 1402.6",
            _FA_H100,
            capability=(9, 0),
        ),
        Card(
            "h200-141gb",
            "H200 SXM 141GB",
            989,
            1979,
            0,
            4.8,
            900,
            794.5,
            1453.4,
            462,
            f"{_CARDS_TSV} 'H200 SXM 141GB' ({ME_ACC}:264,476)",
            f"{MAMF}: bf16 794.5 ('H200 is the same' as H100), fp8 H200 SXM 1453.4",
            _FA_H100,
            capability=(9, 0),
        ),
        Card(
            "b200-192gb",
            "B200 (HGX/DGX B200)",
            2250,
            4500,
            9000,
            8.0,
            1800,
            1745.0,
            3432.5,
            FA4_B200,
            f"{_CARDS_TSV} 'B200' ({ME_ACC}:260; glennklockwood.com/garden/processors/B200 HGX @1000 W)",
            f"{MAMF}: B200 SXM bf16 1745.0, fp8 3432.5",
            _FA4,
            capability=(10, 0),
        ),
        Card(
            "b300-288gb",
            "B300 (HGX/DGX B300)",
            2250,
            4500,
            13125,
            8.0,
            1800,
            1769.0,
            3353.3,
            FA4_B200,
            f"{_CARDS_TSV} 'B300' ({ME_ACC}:259; FP4 conflicts between sources: glennklockwood's 13125 kept)",
            f"{MAMF}: B300 SXM bf16 1769.0, fp8 3353.3",
            f"{_FA4}; no B300 figure, B200's assumed",
            capability=(10, 3),
        ),
        Card(
            "gb200-186gb",
            "GB200 (NVL72)",
            2500,
            5000,
            10000,
            8.0,
            1800,
            1822.0,
            3615.6,
            FA4_B200,
            f"{_CARDS_TSV} 'GB200' ({ME_ACC}:256; torchtitan@b5bcd76c torchtitan/tools/utils.py:184-189)",
            f"{MAMF}: GB200 SXM bf16 1822.0, fp8 3615.6",
            f"{_FA4}; no GB200 figure, B200's assumed",
            capability=(10, 0),
        ),
        Card(
            "gb300-288gb",
            "GB300 (NVL72)",
            2500,
            5000,
            15000,
            8.0,
            1800,
            1822.0,
            3615.6,
            FA4_B200,
            f"{_CARDS_TSV} 'GB300' ({ME_ACC}:255; verda.com/blog/gb300-nvl72-architecture 'without sparsity')",
            f"{MAMF}: no GB300 row, GB200's (same BF16/FP8 peaks) assumed",
            f"{_FA4}; no GB300 figure, B200's assumed",
            capability=(10, 3),
        ),
    )
}


# achieved NVFP4 GEMM TFLOP/s: GB200's best cuBLASLt FP4 GEMM, 7627.6 at 16384^3 (GEMM.md 2: Azure/AI-benchmarking-guide
# @2a370be6 Azure_Results/ND_GB200_v6_results.md "GEMM CuBLASLt (FP4)", CUDA 12.8), 76.3 % of its dense 10000; no
# other card has a published FP4 GEMM, so B200, B300 and GB300 are assumed to reach the same share of their own dense
# FP4 peak (CARDS.tsv fp4_dense_TFLOPs, the sparse headline figures halved: 9000, 13125, 15000)
FP4_GB200 = 7627.6
GEMM_FP4 = {name: FP4_GB200 / _CARDS["gb200-186gb"].fp4 * c.fp4 for name, c in _CARDS.items() if c.fp4}

CARDS: dict[str, Card] = {
    name: replace(c, hbm_copy=HBM_COPY.get(name, 0.0), gemm_fp4=GEMM_FP4.get(name, 0.0)) for name, c in _CARDS.items()
}


def card(name: str) -> Card:
    """A card by its mem4d name (jaxcheck's target names: h100-80gb, ...); one-line ConfigError otherwise."""
    if name not in CARDS:
        raise ConfigError(f"unknown GPU card {name!r}: choose from {', '.join(CARDS)}")
    return CARDS[name]
