#!/usr/bin/env python3
"""Practice mini-sglang: ``python practice/judge.py list | show | start | test | submit | hint | solution | check |
doctor``.

A thin entry into the judge package (``python -m judge`` is the same); see docs/judge.md.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from judge.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
