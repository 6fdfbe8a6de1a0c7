"""torch.cuda on a machine without CUDA: is_available() is False; Stream and Event exist as classes (minisgl
checks isinstance against them) but cannot be made, as in a torch built without CUDA."""

from __future__ import annotations

from typing import Any

from ._unsupported import missing


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


class Stream:
    __module__ = "torch.cuda"

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("torch.cuda.Stream requires CUDA support")


class Event:
    __module__ = "torch.cuda"

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Tried to instantiate dummy base class Event")


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(name)
    raise missing(f"torch.cuda.{name}")
