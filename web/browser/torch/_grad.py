"""inference_mode and no_grad: there is no autograd here, so both are no-ops, as context managers and decorators."""

from __future__ import annotations

import functools
from typing import Any


class _NoGradMode:
    __module__ = "torch"

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # used bare, as @torch.inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: Any = True) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

    def __call__(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapper


class inference_mode(_NoGradMode):
    pass


class no_grad(_NoGradMode):
    def __init__(self) -> None:
        self.mode = True
