"""The rank's place in the tensor-parallel group."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class TPInfo:
    rank: int = 0
    size: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.rank < self.size:
            raise ValueError(f"rank {self.rank} outside a group of {self.size}")


_TP = TPInfo()
_THREAD = threading.local()  # .tp: a rank thread's own place (minisgl/distributed/threads.py)


def get_tp() -> TPInfo:
    return getattr(_THREAD, "tp", _TP)


def set_tp(info: TPInfo) -> None:
    """The process's place (a rank process); ``set_thread_tp`` for a rank thread."""
    global _TP
    _TP = info


def set_thread_tp(info: TPInfo) -> None:
    _THREAD.tp = info
