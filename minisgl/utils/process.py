"""A spawned worker process's first steps: ignore Ctrl-C (the parent stops it), die with its parent, be named."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG, _PR_SET_NAME = 1, 15


def become_worker(name: str, parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole terminal group: the parent stops us
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)  # die with the parent, even if it is killed
        libc.prctl(_PR_SET_NAME, ctypes.c_char_p(f"msgl-{name}"[:15].encode()))  # what ps and top show
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)
