""""slots: the int32 tensor of their slots": offers the row cast to int64 (.long())."""

from __future__ import annotations

import torch

from minisgl.core import Req
from minisgl.scheduler.cache import pages_for


class CacheManager:
    def release(self, req: Req) -> None:
        """A finished request: offer its KV to the prefix cache, free what the cache does not take."""
        p = self.page_size
        kv_len = min(req.cached_len, len(req.input_ids))  # tokens whose KV was written
        held = pages_for(req.cached_len, p) * p
        slots = self.page_table[req.table_idx, :held].long()
        aligned = kv_len - kv_len % p
        kept = self.prefix_cache.insert(req.input_ids[:aligned], slots[:aligned])
        # [0, matched) are the cache's own; [matched, kept) duplicate what it holds; it took [kept, aligned);
        # [aligned, held) was never offered
        m = req.matched_len
        dup = slots[m : max(kept, m) : p] // p
        rest = slots[aligned:held:p] // p
        self.free(dup.tolist() + rest.tolist())
        self.unlock(req)
