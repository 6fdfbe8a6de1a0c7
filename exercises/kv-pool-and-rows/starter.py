"""Exercise kv-pool-and-rows: KVCachePool.store_kv and dummy_slot; TableManager.allocate, free and available.

Your code runs as if written in minisgl/kvcache/pool.py and minisgl/scheduler/table.py (torch is imported).
KVCachePool has self._k, self._v ([num_layers, slots, num_kv_heads, head_dim]), self.num_pages, self.page_size and
self.dummy_page (== num_pages). TableManager has self.size (max_running_req) and self._free (a list of free rows).
"""

from __future__ import annotations

import torch


class KVCachePool:
    def store_kv(self, k: torch.Tensor, v: torch.Tensor, out_loc: torch.Tensor, layer_id: int) -> None:
        """Write k[i], v[i] into slot out_loc[i] of layer layer_id's K and V buffers, in place (out_loc is int32)."""
        raise NotImplementedError("write store_kv")

    @property
    def dummy_slot(self) -> int:
        """The first slot of the dummy page."""
        raise NotImplementedError("write dummy_slot")


class TableManager:
    @property
    def available(self) -> int:
        """How many rows are free."""
        raise NotImplementedError("write available")

    def allocate(self) -> int:
        """Hand out a free row (and remove it from the free rows)."""
        raise NotImplementedError("write allocate")

    def free(self, row: int) -> None:
        """Give a row back; AssertionError for a row not in 0 .. size - 1 or already free."""
        raise NotImplementedError("write free")
