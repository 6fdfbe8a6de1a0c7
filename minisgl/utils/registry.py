"""A registry maps a backend's name to the function that builds it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def deco(fn: Callable[..., T]) -> Callable[..., T]:
            assert name not in self._items, f"{self.kind} {name!r} registered twice"
            self._items[name] = fn
            return fn

        return deco

    def names(self) -> list[str]:
        return sorted(self._items)

    def get(self, name: str) -> Callable[..., T]:
        if name not in self._items:
            raise ValueError(f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names())}")
        return self._items[name]
