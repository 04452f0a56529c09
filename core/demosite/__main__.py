"""``python -m core.demosite``: the demo site without the rest of the CLI."""

import sys

from . import main

sys.exit(main())
