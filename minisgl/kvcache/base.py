"""The prefix cache interface. Keys are token ids; values are KV slot indices, page-aligned."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class MatchResult:
    length: int  # matched tokens, a multiple of page_size
    indices: torch.Tensor  # slot indices of the matched tokens (int32)
    handle: Any  # pass back to lock/unlock


class BasePrefixCache(ABC):
    def __init__(self, page_size: int, device: torch.device) -> None:
        self.page_size = page_size
        self.device = device

    @abstractmethod
    def match_prefix(self, tokens: list[int]) -> MatchResult: ...

    @abstractmethod
    def lock(self, handle: Any) -> None:
        """A locked prefix cannot be evicted."""

    @abstractmethod
    def unlock(self, handle: Any) -> None: ...

    @abstractmethod
    def insert(self, tokens: list[int], indices: torch.Tensor) -> int:
        """Offer a page-aligned prefix and its slots. Returns n: the cache takes ownership of indices[n:], and the
        caller keeps (and so frees) indices[:n] — those tokens were already cached, or the cache keeps nothing."""

    @abstractmethod
    def evict(self, num_pages: int) -> list[int]:
        """Drop least-recently-used unlocked pages; returns the freed page ids (maybe fewer than asked)."""

    @property
    @abstractmethod
    def evictable_pages(self) -> int: ...

    @property
    @abstractmethod
    def cached_pages(self) -> list[int]:
        """Every page the cache holds (for integrity checks)."""
