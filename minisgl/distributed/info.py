"""The rank's place in the tensor-parallel group."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TPInfo:
    rank: int = 0
    size: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.rank < self.size:
            raise ValueError(f"rank {self.rank} outside a group of {self.size}")


_TP = TPInfo()


def get_tp() -> TPInfo:
    return _TP


def set_tp(info: TPInfo) -> None:
    global _TP
    _TP = info
