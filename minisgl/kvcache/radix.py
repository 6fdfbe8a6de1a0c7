"""A page-aligned radix tree over token ids, with LRU eviction of unlocked leaves."""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import torch

from minisgl.kvcache.base import BasePrefixCache, MatchResult


class _Node:
    __slots__ = ("key", "value", "children", "parent", "lock_ref", "last_access")

    def __init__(self, key: list[int], value: torch.Tensor, parent: _Node | None) -> None:
        self.key, self.value, self.parent = key, value, parent  # len(key) == len(value), a multiple of page_size
        self.children: dict[tuple[int, ...], _Node] = {}
        self.lock_ref = 0  # locks held by this node or any descendant
        self.last_access = 0


class RadixPrefixCache(BasePrefixCache):
    def __init__(self, page_size: int, device: torch.device) -> None:
        super().__init__(page_size, device)
        self._root = _Node([], torch.empty(0, dtype=torch.int32, device=device), None)
        self._root.lock_ref = 1  # the root is never evicted
        self._clock = itertools.count(1)
        self._total_pages = 0
        self._locked_pages = 0

    # -- helpers
    def _first(self, tokens: list[int], pos: int) -> tuple[int, ...]:
        return tuple(tokens[pos : pos + self.page_size])

    def _common(self, key: list[int], tokens: list[int], pos: int, end: int) -> int:
        n = min(len(key), end - pos)
        i = 0
        while i < n and key[i] == tokens[pos + i]:
            i += 1
        return i - i % self.page_size

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
        now = next(self._clock)
        while pos < end:
            child = node.children.get(self._first(tokens, pos))
            if child is None:
                break
            n = self._common(child.key, tokens, pos, end)
            if n == 0:
                break
            if n < len(child.key):
                child = self._split(child, n)
            child.last_access = now
            values.append(child.value)
            node, pos = child, pos + n
        return node, pos, values

    # -- interface
    def match_prefix(self, tokens: list[int]) -> MatchResult:
        end = len(tokens) - len(tokens) % self.page_size
        node, pos, values = self._walk(tokens, end)
        indices = torch.cat(values) if values else self._root.value
        return MatchResult(pos, indices, node)

    def lock(self, handle: Any) -> None:
        node = handle
        while node is not None and node is not self._root:
            if node.lock_ref == 0:
                self._locked_pages += len(node.key) // self.page_size
            node.lock_ref += 1
            node = node.parent

    def unlock(self, handle: Any) -> None:
        node = handle
        while node is not None and node is not self._root:
            assert node.lock_ref > 0, "unlock without lock"
            node.lock_ref -= 1
            if node.lock_ref == 0:
                self._locked_pages -= len(node.key) // self.page_size
            node = node.parent

    def insert(self, tokens: list[int], indices: torch.Tensor) -> int:
        end = len(tokens) - len(tokens) % self.page_size
        node, pos, _ = self._walk(tokens, end)
        if pos < end:
            leaf = _Node(list(tokens[pos:end]), indices[pos:end].clone(), node)
            leaf.last_access = next(self._clock)
            node.children[self._first(leaf.key, 0)] = leaf
            self._total_pages += (end - pos) // self.page_size
        return pos

    def evict(self, num_pages: int) -> list[int]:
        leaves = [(n.last_access, id(n), n) for n in self._nodes() if not n.children and n.lock_ref == 0]
        heapq.heapify(leaves)
        freed: list[int] = []
        while leaves and len(freed) < num_pages:
            _, _, node = heapq.heappop(leaves)
            parent = node.parent
            assert parent is not None
            del parent.children[self._first(node.key, 0)]
            freed.extend((node.value[:: self.page_size] // self.page_size).tolist())
            self._total_pages -= len(node.key) // self.page_size
            if parent is not self._root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(leaves, (parent.last_access, id(parent), parent))
        return freed

    def _nodes(self) -> list[_Node]:
        out, stack = [], list(self._root.children.values())
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(n.children.values())
        return out

    @property
    def evictable_pages(self) -> int:
        return self._total_pages - self._locked_pages

    @property
    def cached_pages(self) -> list[int]:
        pages: list[int] = []
        for n in self._nodes():
            pages.extend((n.value[:: self.page_size] // self.page_size).tolist())
        return pages
