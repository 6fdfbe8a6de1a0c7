"""Exercise page-allocation: CacheManager.allocate and CacheManager._take.

Your code runs as if written in minisgl/scheduler/cache.py: torch, Req and pages_for(tokens, page_size) are
available. The class is the engine's CacheManager: self.page_size, self.page_table ([rows, max_seq_len] int32),
self.device, self._free_pages (a list of free page ids), self.prefix_cache (evict(k) -> freed page ids) and
self._offsets (arange(page_size), int32).
"""

from __future__ import annotations

import torch

from minisgl.core import Req
from minisgl.scheduler.cache import pages_for


class CacheManager:
    def _take(self, n: int) -> list[int]:
        """Remove n page ids from the free list and return them; evict from the prefix cache first if fewer are
        free; RuntimeError (needed and available counts) if still short."""
        raise NotImplementedError("write _take")

    def allocate(self, reqs: list[Req]) -> None:
        """Give each request the pages for positions [cached_len, device_len) it does not hold yet, and write
        page_table[row, k * page_size + o] = P * page_size + o for each new page P (its k-th page)."""
        raise NotImplementedError("write allocate")
