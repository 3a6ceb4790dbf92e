"""``python -m vsb``: the ``vsb`` command (for a checkout on PYTHONPATH or a venv without
its console script)."""

import sys

from vsb.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
