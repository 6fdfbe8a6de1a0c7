"""``python -m judge``: the same command line as ``python practice/judge.py``."""

import sys

from .cli import main

sys.exit(main())
