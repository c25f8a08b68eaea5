"""`python -m symbolic.cli`: the same as the `mem4d` command."""

import sys

from .entry import main

sys.exit(main())
