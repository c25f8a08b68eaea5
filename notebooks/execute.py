"""Execute the notebooks in place, so that their committed outputs read on GitHub and match a fresh run
(tests/test_notebook.py checks that they do): `python notebooks/execute.py [NAME.ipynb ...]` (default: all).

Needs the `notebooks` extra (nbformat, nbclient, ipykernel). The CUDA plugin's notices that this machine has no GPU
driver, which the mem4d commands hold back but a kernel prints, are dropped from the stored outputs.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DRIVER_NOTICE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|I\d{4} [\d:.]+ +\d+ cudart_stub\.cc:\d+\] Could not find cuda drivers.*|\s*)$"
)


def _without_driver_notices(nb) -> None:
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [
                out
                for out in cell.outputs
                if not (
                    out.output_type == "stream"
                    and out.name == "stderr"
                    and all(DRIVER_NOTICE.match(line) for line in out.text.splitlines())
                )
            ]


def execute(path: Path, timeout: int = 600) -> float:
    """Run every cell of one notebook in a fresh kernel (in its own folder) and save it; the seconds it took."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    seconds = time.perf_counter() - start
    _without_driver_notices(nb)
    nbformat.write(nb, path)
    return seconds


if __name__ == "__main__":
    paths = [Path(p) for p in sys.argv[1:]] or sorted(HERE.glob("*.ipynb"))
    for path in paths:
        print(f"{path.name}: executed in {execute(path):.0f} s", flush=True)
