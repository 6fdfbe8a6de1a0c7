"""Exercise cache-match-and-lock: CacheManager.match_and_lock and CacheManager.unlock.

Your code runs as if written in minisgl/scheduler/cache.py (its imports and globals are
available). The class is the engine's: write the methods inside this stub.
"""

from __future__ import annotations

import torch

from minisgl.core import Req


class CacheManager:
    page_table: torch.Tensor  # int32 [rows, max_seq_len]: KV slot of each position of each row
    hit_tokens: int  # prompt tokens served from the prefix cache

    def match_and_lock(self, req: Req) -> None:
        """Reuse the longest cached prefix (leaving at least one prompt token to compute): lock it, set
        cached_len and matched_len, count the hit, and point the request's page-table row at its slots."""
        raise NotImplementedError("write match_and_lock")

    def unlock(self, req: Req) -> None:
        """Unlock the request's matched prefix and forget its handle."""
        raise NotImplementedError("write unlock")
