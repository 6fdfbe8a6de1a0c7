"""Exercise radix-match-insert: RadixPrefixCache._split, _walk, match_prefix and insert.

Your code runs as if written in minisgl/kvcache/radix.py (its imports and globals are
available: torch, _Node, MatchResult, ...). The class is the engine's: write the methods inside
this stub. Already there: self._root, self._clock, self._total_pages, self.page_size, self.device,
self._first(tokens, pos), self._common(key, tokens, pos, end).
"""

from __future__ import annotations

import torch

from minisgl.kvcache.base import MatchResult
from minisgl.kvcache.radix import _Node


class RadixPrefixCache:
    def _split(self, node: _Node, at: int) -> _Node:
        """Cut node's key at `at` (page-aligned): returns the new upper half, which becomes node's parent."""
        raise NotImplementedError("write _split")

    def _walk(self, tokens: list[int], end: int) -> tuple[_Node, int, list[torch.Tensor]]:
        """Follow tokens[:end] down the tree by whole pages, splitting where the match ends inside a node;
        returns (the node reached, tokens matched, the matched nodes' values)."""
        raise NotImplementedError("write _walk")

    def match_prefix(self, tokens: list[int]) -> MatchResult:
        """The longest cached page-aligned prefix: MatchResult(length, int32 slots, handle node)."""
        raise NotImplementedError("write match_prefix")

    def insert(self, tokens: list[int], indices: torch.Tensor) -> int:
        """Add the page-aligned part of tokens; returns how many tokens were already cached."""
        raise NotImplementedError("write insert")
