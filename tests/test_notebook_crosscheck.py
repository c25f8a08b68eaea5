"""The crosscheck notebook runs top to bottom, fresh, and reproduces its committed checks (tests/test_notebook.py
says how). In a file of its own: pytest-xdist's loadfile hands a file to one worker whole, and this notebook is the
longest part of the three (about 47 s of 76 s), so the other two run beside it rather than after it.

Source of truth and tolerance: as tests/test_notebook.py (the notebook's own exact checks; numbers to SLACK_BYTES).
"""

from test_notebook import runs_fresh_and_reproduces_its_checks


def test_crosscheck_notebook_runs_fresh_and_reproduces_its_checks(tmp_path):
    runs_fresh_and_reproduces_its_checks("crosscheck", tmp_path)
