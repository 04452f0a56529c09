"""``python -m core.cli …`` = ``shopfleet …``."""

import sys

from . import main

sys.exit(main())
