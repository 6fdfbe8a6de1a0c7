""""set req.cached_len and req.matched_len to the matched length": set only when something matched (a miss keeps stale ones)."""

from __future__ import annotations

import torch

from minisgl.core import Req


class CacheManager:
    def match_and_lock(self, req: Req) -> None:
        """Reuse the longest cached prefix (leaving at least one prompt token to compute)."""
        match = self.prefix_cache.match_prefix(req.input_ids[: req.prompt_len - 1])
        self.prefix_cache.lock(match.handle)
        req.cache_handle = match.handle
        self.hit_tokens += match.length
        if match.length:
            req.cached_len = req.matched_len = match.length
            self.page_table[req.table_idx, : match.length] = match.indices

    def unlock(self, req: Req) -> None:
        self.prefix_cache.unlock(req.cache_handle)
        req.cache_handle = None
