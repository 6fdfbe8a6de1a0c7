"""inference_mode and no_grad, as context managers and decorators. There is no autograd here: both compute the same;
what is kept is the state torch.is_inference_mode_enabled() reports (no_grad leaves it alone, as in torch)."""

from __future__ import annotations

import functools
from typing import Any

_inference = [False]  # the current inference mode (one interpreter, one thread: the browser's)


def is_inference_mode_enabled() -> bool:
    return _inference[0]


class _NoGradMode:
    __module__ = "torch"

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # used bare, as @torch.inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: Any = True) -> None:
        self.mode = bool(mode)
        self._outer: list[bool] = []  # the modes to restore, one per nested entry of this object

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
    def __enter__(self) -> None:
        self._outer.append(_inference[0])
        _inference[0] = self.mode

    def __exit__(self, *exc: object) -> None:
        _inference[0] = self._outer.pop()


class no_grad(_NoGradMode):
    def __init__(self) -> None:
        super().__init__(True)
