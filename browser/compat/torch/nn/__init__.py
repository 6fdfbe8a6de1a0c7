"""torch.nn: only its functional module (minisgl's layers are plain objects, not nn.Module)."""

from typing import Any

from .._unsupported import missing
from . import functional


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(name)
    raise missing(f"torch.nn.{name}")


__all__ = ["functional"]
