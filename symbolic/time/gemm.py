"""A GEMM's share of its card's best by its size: cuBLASLt's measured TFLOP/s of square GEMMs 1024^3 to 32768^3
(Azure/AI-benchmarking-guide@8fd0c6e1 Azure_Results/ND_*_results.md, GB200 file @2a370be6; GEMM.md 2), each row
over its largest; a GEMM [M, K] x [K, N] is taken at the square size (M N K)^(1/3) (an assumption: the table has
few rectangular shapes), log-interpolated, 1 beyond the table."""

from __future__ import annotations

import numpy as np

SIZES = (1024, 2048, 4096, 8192, 16384, 32768)
# card family -> TFLOP/s at SIZES (GEMM.md 2); BF16 has no per-shape row on Hopper or Blackwell, so the FP8 row's
# shape is taken for it too, and B200, B300 and GB300 take GB200's (same Blackwell tensor cores; assumed)
CURVES = {
    "a100": (119.4, 221.8, 228.0, 253.7, 256.5, 256.5),  # A100-SXM4-80GB FP16 (ND_A100_v4:17-31; 32768^3 not run)
    "h100": (274.1, 1011.3, 1216.9, 1290.1, 1377.3, 1382.2),  # H100 80GB HBM3 FP8 (ND_H100_v5:17-32)
    "h200": (290.8, 1013.4, 1249.1, 1300.6, 1366.3, 1349.5),  # H200 141GB FP8 (ND_H200_v5:17-32)
    "blackwell": (489.2, 2243.6, 2834.6, 2876.6, 2906.9, 2825.6),  # GB200 FP8 (ND_GB200_v6 "GEMM CuBLASLt (FP8)")
    "blackwell-fp4": (287.2, 1677.7, 5177.3, 7535.6, 7627.6, 7487.2),  # GB200 FP4 (ND_GB200_v6 "GEMM CuBLASLt (FP4)")
}
FAMILY = {
    "a100-40gb": "a100",
    "a100-80gb": "a100",
    "h100-80gb": "h100",
    "h200-141gb": "h200",
    "b200-192gb": "blackwell",
    "b300-288gb": "blackwell",
    "gb200-186gb": "blackwell",
    "gb300-288gb": "blackwell",
}


def share(card_name: str, m, n, k, precision: str = "bf16"):
    """The card's achieved GEMM TFLOP/s at [m, k] x [k, n] over its best (0 to 1), numpy-broadcast; an FP4 GEMM
    (NVFP4, Blackwell alone) by the FP4 row, which falls off faster below 4096^3 than FP8's."""
    family = FAMILY[card_name] + ("-fp4" if precision == "fp4" else "")
    curve = np.asarray(CURVES[family])
    size = np.cbrt(np.asarray(m, dtype=float) * np.asarray(n, dtype=float) * np.asarray(k, dtype=float))
    return np.interp(np.log2(np.maximum(size, 1.0)), np.log2(SIZES), curve / curve.max())
