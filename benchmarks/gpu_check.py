"""One command for whoever has a GPU lent: measured peak vs XLA:GPU (real device and deviceless target) vs symbolic.

    PYTHONPATH=. python benchmarks/gpu_check.py            # writes records/gpu-<device>.jsonl

A ladder of configurations that fit on one device (d = t = p = c = 1), each compiled for the real device (in a
fresh process that also runs one step and reads peak_bytes_in_use: jax cannot reset the peak) and deviceless for the
matching target (the program as written), next to the `jax` profile's figure. Runs in a few minutes on one H100/H200;
without a GPU it stops with one line. Nothing here is a test: the results are data, committed as they come out.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LADDER = [  # (model, Training fields): small to large, every one fits in a 40 GB card's bytes_limit
    ("tiny", dict(s=1024, recompute="none")),
    ("tiny", dict(s=2048, gbs=4, recompute="full")),
    ("grids/models/three-layer.json", dict(s=4096, recompute="selective")),
    ("grids/models/tied-1024.json", dict(s=2048, b=2, gbs=4, recompute="none")),
    ("grids/models/tied-2048.json", dict(s=2048, recompute="none")),
    ("grids/models/tied-2048.json", dict(s=4096, gbs=4, recompute="full")),
    ("grids/models/twenty-layer.json", dict(s=2048, gbs=2, recompute="selective")),
    ("grids/models/gqa-2560.json", dict(s=2048, recompute="full")),
]


def _driver() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def _card(kind: str):
    """The shipped target whose card this device is (by name), or None."""
    from jaxcheck.targets import load, names

    for name in names()[1:]:
        target = load(name)
        if target.description.replace("NVIDIA", "").split()[0].lower() in kind.lower():
            return target
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "records"), help="directory for gpu-<device>.jsonl")
    parser.add_argument(
        "--budget", type=float, default=420.0, help="stop starting new configurations after this many s"
    )
    args = parser.parse_args()
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # the measuring subprocesses need the memory
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")  # no traceback from the plugin where CUDA is absent
    from jaxcheck.backend import quiet_native_stderr

    with quiet_native_stderr():
        import jax

        devices = jax.devices()
    if devices[0].platform not in ("gpu", "cuda"):
        print(
            f"gpu_check: no GPU visible to jax (its devices are {devices[0].platform}): nothing to measure",
            file=sys.stderr,
        )
        return 2
    from jaxcheck.card import AS_WRITTEN_BYTES
    from jaxcheck.compile import compile_step
    from jaxcheck.crosscheck.profile import symbolic_bytes
    from jaxcheck.measure import measure
    from jaxcheck.mesh import make_mesh
    from jaxcheck.spec import StepSpec
    from jaxcheck.targets import devices as topology
    from symbolic.config.hfconfig import resolve_model
    from symbolic.config.training import Training

    kind = devices[0].device_kind
    target = _card(kind)
    header = {
        "device": kind,
        "driver": _driver(),
        "jax": jax.__version__,
        "platform_version": devices[0].client.platform_version,
        "date": datetime.date.today().isoformat(),
        "target": target.name if target else None,
    }
    out = Path(args.out) / f"gpu-{kind.replace('NVIDIA', '').strip().replace(' ', '-').lower()}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with out.open("a") as handle:
        for model, fields in LADDER:
            if time.monotonic() - start > args.budget:
                print(
                    f"gpu_check: budget of {args.budget:.0f} s spent; stopping before {model} {fields}", file=sys.stderr
                )
                break
            os.chdir(ROOT)
            spec = StepSpec(resolve_model(model), Training(zero=0, **fields)).check()
            record = {**header, "model": spec.shape.name, "config": spec.as_json(widths=True)}
            record["symbolic"] = symbolic_bytes(spec.shape, spec.train, spec.opts, "gpu")
            if target is not None:
                written = target.with_memory(AS_WRITTEN_BYTES)
                report, _, _ = compile_step(spec, make_mesh(spec.train, topology(written, 1)))
                record["xla_deviceless"] = report.xla
            record["measured"] = measure(spec, timeout=max(60.0, args.budget))
            record["seconds"] = round(time.monotonic() - start, 1)
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            measured = record["measured"] or {}
            print(
                f"{record['model']} {fields}: symbolic {record['symbolic']['total'] / 2**30:.2f} GiB, deviceless "
                f"{record.get('xla_deviceless', {}).get('total_bytes', 0) / 2**30:.2f}, real-device XLA "
                f"{measured.get('xla', {}).get('total_bytes', 0) / 2**30:.2f}, measured peak "
                f"{measured.get('peak_bytes', 0) / 2**30:.2f} GiB",
                flush=True,
            )
    print(f"gpu_check: wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
