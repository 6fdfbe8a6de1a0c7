"""KV pages: allocation (evicting from the prefix cache when short), prefix reuse, and return on finish."""

from __future__ import annotations

import torch

from minisgl.core import Req
from minisgl.kvcache import create_prefix_cache


def pages_for(tokens: int, page_size: int) -> int:
    return (tokens + page_size - 1) // page_size


class CacheManager:
    def __init__(self, num_pages: int, page_size: int, cache_type: str, page_table: torch.Tensor,
                 device: torch.device) -> None:
        self.num_pages, self.page_size = num_pages, page_size
        self.page_table, self.device = page_table, device
        self._free_pages = list(range(num_pages - 1, -1, -1))
        self.prefix_cache = create_prefix_cache(cache_type, page_size, device)
        self._offsets = torch.arange(page_size, dtype=torch.int32, device=device)
        self.hit_tokens = 0  # prompt tokens served from the prefix cache, over the engine's life

    @property
    def free_pages(self) -> int:
        return len(self._free_pages)

    @property
    def available_pages(self) -> int:
        """Pages that allocation can get: free now, or held by the prefix cache and not locked."""
        return len(self._free_pages) + self.prefix_cache.evictable_pages

    def _take(self, n: int) -> list[int]:
        if n > len(self._free_pages):
            self._free_pages.extend(self.prefix_cache.evict(n - len(self._free_pages)))
        if n > len(self._free_pages):
            raise RuntimeError(f"out of KV pages: need {n}, have {len(self._free_pages)} (admission let too much in)")
        taken = self._free_pages[-n:]
        del self._free_pages[-n:]
        return taken

    def free(self, pages: list[int]) -> None:
        self._free_pages.extend(pages)

    def match_and_lock(self, req: Req) -> None:
        """Reuse the longest cached prefix (leaving at least one prompt token to compute)."""
        match = self.prefix_cache.match_prefix(req.input_ids[: req.prompt_len - 1])
        self.prefix_cache.lock(match.handle)
        req.cache_handle = match.handle
        req.cached_len = req.matched_len = match.length
        self.hit_tokens += match.length
        if match.length:
            self.page_table[req.table_idx, : match.length] = match.indices

    def unlock(self, req: Req) -> None:
        self.prefix_cache.unlock(req.cache_handle)
        req.cache_handle = None

    def allocate(self, reqs: list[Req]) -> None:
        """Give each request pages for positions [cached_len, device_len). Invariant: a request holds exactly the
        pages of positions [0, cached_len), rounded up to whole pages."""
        p = self.page_size
        rows, starts, pages = [], [], []
        for req in reqs:
            have, need = pages_for(req.cached_len, p), pages_for(req.device_len, p)
            if need > have:
                for i, page in enumerate(self._take(need - have)):
                    rows.append(req.table_idx)
                    starts.append((have + i) * p)
                    pages.append(page)
        if not pages:
            return
        row_t = torch.tensor(rows, dtype=torch.int64, device=self.device)[:, None]
        col_t = torch.tensor(starts, dtype=torch.int64, device=self.device)[:, None] + self._offsets[None, :]
        slot_t = torch.tensor(pages, dtype=torch.int32, device=self.device)[:, None] * p + self._offsets[None, :]
        self.page_table[row_t, col_t] = slot_t

    def release(self, req: Req) -> None:
        """A finished request: offer its KV to the prefix cache, free what the cache does not take."""
        p = self.page_size
        kv_len = min(req.cached_len, len(req.input_ids))  # tokens whose KV was written
        held = pages_for(req.cached_len, p) * p
        slots = self.page_table[req.table_idx, :held]
        aligned = kv_len - kv_len % p
        kept = self.prefix_cache.insert(req.input_ids[:aligned], slots[:aligned])
        # [0, matched) are the cache's own; [matched, kept) duplicate what it holds; it took [kept, aligned);
        # [aligned, held) was never offered
        m = req.matched_len
        dup = slots[m : max(kept, m) : p] // p
        rest = slots[aligned:held:p] // p
        self.free(dup.tolist() + rest.tolist())
        self.unlock(req)

    def integrity_errors(self, running: list[Req]) -> list[str]:
        """Every page is exactly one of: free, held by the prefix cache, or held by a running request."""
        owners: dict[int, str] = {}
        errors: list[str] = []

        def own(page: int, who: str) -> None:
            if not 0 <= page < self.num_pages:
                errors.append(f"page {page} ({who}) is out of range")
            elif page in owners:
                errors.append(f"page {page} is both {owners[page]} and {who}")
            else:
                owners[page] = who

        for page in self._free_pages:
            own(page, "free")
        cached = set(self.prefix_cache.cached_pages)
        for page in cached:
            own(page, "cached")
        p = self.page_size
        for req in running:
            held = pages_for(req.cached_len, p)
            for page in (self.page_table[req.table_idx, req.matched_len : held * p : p] // p).tolist():
                own(page, f"held by request {req.uid}")
        if len(owners) != self.num_pages and not errors:
            errors.append(f"{self.num_pages - len(owners)} pages are lost (neither free, cached nor held)")
        return errors
