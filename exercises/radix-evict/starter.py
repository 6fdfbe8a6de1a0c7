"""Exercise radix-evict: RadixPrefixCache.evict.

Your code runs as if written in minisgl/kvcache/radix.py (its imports and globals are available:
heapq, torch, _Node, ...). The class is the engine's: write the method inside this stub. Already
there: self._root, self.page_size, self._total_pages, self._first(tokens, pos), self._nodes().
"""

from __future__ import annotations

import heapq


class RadixPrefixCache:
    def evict(self, num_pages: int) -> list[int]:
        """Drop least-recently-used unlocked leaves (parents that become such leaves too) until at least
        num_pages pages are freed or nothing is left; returns the freed page ids."""
        raise NotImplementedError("write evict")
