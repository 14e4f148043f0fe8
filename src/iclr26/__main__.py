"""``python -m iclr26`` runs the ``iclr26`` command."""

import sys

from iclr26.cli import main

if __name__ == "__main__":
    sys.exit(main())
