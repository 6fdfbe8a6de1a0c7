"""Exercise cache-allocate: CacheManager._take and CacheManager.allocate.

Your code runs as if written in minisgl/scheduler/cache.py (its imports and globals are
available: torch, pages_for, Req). The class is the engine's: write the methods inside this stub.
"""

from __future__ import annotations

import torch

from minisgl.core import Req
from minisgl.scheduler.cache import pages_for


class CacheManager:
    page_size: int
    page_table: torch.Tensor  # int32 [rows, max_seq_len]: KV slot of each position of each row
    _free_pages: list  # free page ids

    def _take(self, n: int) -> list[int]:
        """Remove n pages from the free list (evicting only the shortfall from the prefix cache when
        short) and return them; RuntimeError if there are not n even then."""
        raise NotImplementedError("write _take")

    def allocate(self, reqs: list[Req]) -> None:
        """Give each request the pages for positions [cached_len, device_len) that it does not hold yet
        (it holds those of [0, cached_len), rounded up), written into its page-table row."""
        raise NotImplementedError("write allocate")
