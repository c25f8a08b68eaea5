"""Where XLA:GPU pads the contracting dimension of an fp32 dot: the measurement behind the jax profile's
`vocab_padded` row (symbolic/recipes/jax/onef1b_gpu.py: SMS, SPLIT_WORK, VOCAB_GRAINS, vocab_padded).

    python benchmarks/vocab_pad_probe.py [--target h100-80gb] [--k 4001 8001 ...]

For each output shape [M, N] (M: the logits' rows b s/c, N: h) and each K (v/t), it compiles, without a GPU, the
product the loss's backward makes, an elementwise fp32 producer of [M, K] times [N, K] transposed (as the logits
gradient times the head), and prints the width XLA padded K to, or '-' where it did not pad, with the output's
128 x 128 tiles and K (SMS - tiles). Needs the CUDA plugin (pip install 'jax[cuda12-local]'); a few seconds a shape.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHAPES = [
    (1024, 256),
    (1024, 512),
    (1024, 1024),
    (1024, 1536),
    (2048, 896),
    (2048, 1024),
    (2048, 1040),
    (1536, 1408),
    (2048, 1152),
    (2048, 1536),
    (4096, 1024),
    (4096, 2048),
]
KS = [4001, 8001, 16001, 32001, 40001, 45002, 48001, 50004, 56001, 96001, 200001]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="h100-80gb", help="a GPU target of jaxcheck/targets (default h100-80gb)")
    parser.add_argument("--k", type=int, nargs="+", default=KS, help="contracting widths v/t to try")
    args = parser.parse_args()

    from jaxcheck.backend import start
    from jaxcheck.card import AS_WRITTEN_BYTES
    from jaxcheck.targets import load
    from symbolic.recipes.jax.onef1b_gpu import SMS

    devices, _ = start(load(args.target).with_memory(AS_WRITTEN_BYTES), 1)
    import jax
    import jax.numpy as jnp
    from jax.sharding import SingleDeviceSharding

    one = SingleDeviceSharding(devices[0])
    product = jax.jit(lambda g, w: (jnp.exp(g) * 0.5 - g) @ w.T, in_shardings=one, out_shardings=one)
    print(f"target {args.target}; K padded to (or '-'), by output [M, N]; SMS = {SMS} is the H100's")
    for m, n in SHAPES:
        tiles = -(-m // 128) * -(-n // 128)
        cells = []
        for k in args.k:
            text = (
                product.lower(jax.ShapeDtypeStruct((m, k), jnp.float32), jax.ShapeDtypeStruct((n, k), jnp.float32))
                .compile()
                .as_text()
            )
            padded = re.search(r"f32\[%d,(\d+)\]\{1,0\} pad\(" % m, text)
            cells.append(f"{k}:{padded.group(1) if padded else '-'}({k * (SMS - tiles)})")
        print(f"[{m}, {n}] tiles {tiles}: " + " ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
