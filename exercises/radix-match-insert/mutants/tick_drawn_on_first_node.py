"""_walk, "one new tick (drawn once when the walk starts, even if it passes no node)": drawn only on reaching a node."""

from __future__ import annotations

import torch

from minisgl.kvcache.base import MatchResult
from minisgl.kvcache.radix import _Node


class RadixPrefixCache:
    def _split(self, node: _Node, at: int) -> _Node:
        """Cut node's key at `at` (page-aligned): returns the new upper half, which becomes node's parent."""
        assert node.parent is not None and 0 < at < len(node.key)
        upper = _Node(node.key[:at], node.value[:at], node.parent)
        upper.lock_ref, upper.last_access = node.lock_ref, node.last_access
        node.parent.children[self._first(node.key, 0)] = upper
        node.key, node.value, node.parent = node.key[at:], node.value[at:], upper
        upper.children[self._first(node.key, 0)] = node
        return upper

    def _walk(self, tokens: list[int], end: int) -> tuple[_Node, int, list[torch.Tensor]]:
        node, pos, values = self._root, 0, []
        now = None
        while pos < end:
            child = node.children.get(self._first(tokens, pos))
            if child is None:
                break
            n = self._common(child.key, tokens, pos, end)
            if n == 0:
                break
            if n < len(child.key):
                child = self._split(child, n)
            if now is None:
                now = next(self._clock)
            child.last_access = now
            values.append(child.value)
            node, pos = child, pos + n
        return node, pos, values

    def match_prefix(self, tokens: list[int]) -> MatchResult:
        end = len(tokens) - len(tokens) % self.page_size
        node, pos, values = self._walk(tokens, end)
        indices = torch.cat(values) if values else self._root.value
        return MatchResult(pos, indices, node)

    def insert(self, tokens: list[int], indices: torch.Tensor) -> int:
        end = len(tokens) - len(tokens) % self.page_size
        node, pos, _ = self._walk(tokens, end)
        if pos < end:
            leaf = _Node(list(tokens[pos:end]), indices[pos:end].clone(), node)
            leaf.last_access = next(self._clock)
            node.children[self._first(leaf.key, 0)] = leaf
            self._total_pages += (end - pos) // self.page_size
        return pos
