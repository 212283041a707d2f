"""``python -m pytest_blackbox.cli``: the ``blackbox`` command. See docs/cli.md."""

import sys

from . import main

sys.exit(main())
