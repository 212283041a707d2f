"""``python -m pytest_blackbox.cli``."""

import sys

from . import main

sys.exit(main())
