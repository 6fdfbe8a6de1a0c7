from __future__ import annotations

from typing import Any

import torch

from minisgl.kvcache.base import BasePrefixCache, MatchResult


class NaivePrefixCache(BasePrefixCache):
    """No reuse: nothing matches and nothing is kept."""

    def match_prefix(self, tokens: list[int]) -> MatchResult:
        return MatchResult(0, torch.empty(0, dtype=torch.int32, device=self.device), None)

    def lock(self, handle: Any) -> None:
        pass

    def unlock(self, handle: Any) -> None:
        pass

    def insert(self, tokens: list[int], indices: torch.Tensor) -> int:
        return len(tokens)  # takes nothing

    def evict(self, num_pages: int) -> list[int]:
        return []

    @property
    def evictable_pages(self) -> int:
        return 0

    @property
    def cached_pages(self) -> list[int]:
        return []
