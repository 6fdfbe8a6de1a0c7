"""Exercise cache-release: CacheManager.release.

Your code runs as if written in minisgl/scheduler/cache.py (its imports and globals are
available: torch, pages_for, Req). The class is the engine's: write the method inside this stub.
"""

from __future__ import annotations

import torch

from minisgl.core import Req
from minisgl.scheduler.cache import pages_for


class CacheManager:
    page_size: int
    page_table: torch.Tensor  # int32 [rows, max_seq_len]: KV slot of each position of each row

    def release(self, req: Req) -> None:
        """A finished request: offer its KV (whole pages, tokens with KV only) to the prefix cache, free each
        page the cache does not take (never one of the cache's own), and unlock its matched prefix."""
        raise NotImplementedError("write release")
