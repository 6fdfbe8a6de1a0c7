"""Admission and prefill batching: first come first served, chunked under a token budget, and never more KV pages
promised than exist (every admitted request can always run to its max_tokens)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from minisgl.core import Batch, Req
from minisgl.scheduler.cache import CacheManager, pages_for
from minisgl.scheduler.table import TableManager


class PrefillManager:
    def __init__(self, cache: CacheManager, table: TableManager, write_prompt: Callable[[Req], None],
                 chunk_budget: int) -> None:
        self.cache, self.table = cache, table
        self._write_prompt = write_prompt  # puts an admitted request's prompt into the token pool
        self.chunk_budget = chunk_budget
        self.pending: deque[Req] = deque()  # waiting, in arrival order; an admitted, part-prefilled req stays first
        self.admitted: dict[int, Req] = {}  # uid -> every admitted, unfinished request

    def add(self, req: Req) -> None:
        self.pending.append(req)

    def _reserved_pages(self) -> int:
        """Pages that admitted requests may still allocate, up to their max length."""
        p = self.cache.page_size
        return sum(pages_for(r.max_device_len, p) - pages_for(r.cached_len, p) for r in self.admitted.values())

    def _try_admit(self, req: Req) -> bool:
        if self.table.available == 0:
            return False
        req.table_idx = self.table.allocate()
        self.cache.match_and_lock(req)
        need = pages_for(req.max_device_len, self.cache.page_size) - pages_for(req.cached_len, self.cache.page_size)
        if need > self.cache.available_pages - self._reserved_pages():
            self.cache.unlock(req)
            req.cached_len = req.matched_len = 0
            self.table.free(req.table_idx)
            req.table_idx = -1
            return False
        self._write_prompt(req)
        self.admitted[req.uid] = req
        return True

    def finish(self, req: Req) -> None:
        self.admitted.pop(req.uid, None)

    def schedule_next_batch(self) -> Batch | None:
        budget = self.chunk_budget
        reqs: list[Req] = []
        while self.pending and budget > 0:
            req = self.pending[0]
            if req.uid not in self.admitted and not self._try_admit(req):
                break  # first come first served: nobody overtakes a request waiting for memory
            remaining = req.prompt_len - req.cached_len
            chunk = min(remaining, budget)
            req.device_len = req.cached_len + chunk
            req.chunked = chunk < remaining  # its sampled token is dropped; the next chunk follows
            reqs.append(req)
            budget -= chunk
            if not req.chunked:
                self.pending.popleft()
        return Batch(reqs=reqs, phase="prefill") if reqs else None
