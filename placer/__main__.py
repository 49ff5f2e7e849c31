"""``python -m placer``: the ``placer`` command."""

import sys

from placer.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
