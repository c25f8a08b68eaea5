"""Nothing half written: an output file (plan --csv and --plot, latex -o, report -o) appears whole or not at all.

Source of truth: the CLI contract (docs/commands.md: 130 on Ctrl-C with no partial file). symbolic.render.files
.replaced writes a temporary file beside the target and renames it once complete; exact checks of what the folder
holds after an interrupt at a chosen point, and one real SIGINT at a random moment of `plan --csv`.
"""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from symbolic.config.errors import ConfigError
from symbolic.render.files import replaced

ROOT = Path(__file__).resolve().parents[1]


def test_a_complete_block_replaces_the_file_and_keeps_its_mode(tmp_path):
    target = tmp_path / "plan.csv"
    target.write_text("old\n")
    target.chmod(0o640)
    with replaced(target) as handle:
        handle.write("new\n")
        assert target.read_text() == "old\n"  # not touched until the block completes
    assert target.read_text() == "new\n" and (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.csv"]


@pytest.mark.parametrize("existing", [True, False])
def test_an_interrupt_leaves_the_folder_as_it_was(tmp_path, existing):
    target = tmp_path / "plan.csv"
    if existing:
        target.write_text("old\n")
    with pytest.raises(KeyboardInterrupt), replaced(target) as handle:
        handle.write("half a row,")
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == (["plan.csv"] if existing else [])
    assert not existing or target.read_text() == "old\n"


def test_a_path_that_is_no_regular_file_is_written_directly(tmp_path):
    with replaced(os.devnull) as handle:  # /dev/null: no temporary file in /dev
        handle.write("x")


def test_a_folder_that_takes_no_file_is_one_line(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    if os.access(folder, os.W_OK):
        pytest.skip("running as a user who may write anywhere (root)")
    with pytest.raises(ConfigError, match="cannot write"), replaced(folder / "x.csv") as handle:
        handle.write("x")


def test_sigint_at_a_random_moment_of_plan_csv(tmp_path):
    """`plan --csv` (17,179 rows, about 3 s of CPU), SIGINT after a random 0.5 to 3 s: either it finished (exit 0, every
    row there) or it stopped (exit 130 within 5 s, no file, no temporary file)."""
    target = tmp_path / "plan.csv"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "symbolic.cli",
            "plan",
            "--model",
            "tiny",
            "--gpus",
            "64",
            "--seq",
            "256",
            "--gbs",
            "512",
            "--csv",
            str(target),
            "--top",
            "1",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(random.uniform(0.5, 3.0))
    child.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = child.communicate(timeout=60)
    if child.returncode == 0:
        rows = int(err.split("wrote ")[1].split()[0])
        assert len(target.read_text().splitlines()) == rows + 1  # the header and every row
    else:
        assert child.returncode == 130 and time.monotonic() - sent < 5, (child.returncode, err)
        assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())
        assert err.strip().endswith("interrupted") and "Traceback" not in err, err
