"""Exercise radix-lock: RadixPrefixCache.lock, unlock and the evictable_pages property.

Your code runs as if written in minisgl/kvcache/radix.py (its imports and globals are available).
The class is the engine's: write the methods inside this stub. Already there: self._root,
self.page_size, self._total_pages, self._locked_pages (0 at the start).
"""

from __future__ import annotations

from typing import Any


class RadixPrefixCache:
    def lock(self, handle: Any) -> None:
        """A locked prefix cannot be evicted: lock_ref + 1 on the handle and every node above it (not the root)."""
        raise NotImplementedError("write lock")

    def unlock(self, handle: Any) -> None:
        """Undo lock(handle); assert that every node on the way was locked."""
        raise NotImplementedError("write unlock")

    @property
    def evictable_pages(self) -> int:
        """Pages in the tree that no lock protects."""
        raise NotImplementedError("write evictable_pages")
