"""`python -m treedyn_core` runs the `treedyn` command."""

import sys

from .cli import main

sys.exit(main())
