"""``python -m treedyn_app [PRESET]``: the treedyn desktop app."""

import sys

from .main import main

sys.exit(main())
