"""_take, "pages evicted beyond the shortfall stay on the free list": it hands out what it needs of the evicted
pages and drops the rest (they are neither free nor cached any more)."""


class CacheManager:
    def _take(self, n):
        taken = []
        if n > len(self._free_pages):
            evicted = self.prefix_cache.evict(n - len(self._free_pages))
            taken = list(evicted[: n - len(self._free_pages)])
        if n > len(self._free_pages) + len(taken):
            raise RuntimeError("out of KV pages")
        k = n - len(taken)
        if k:
            taken += self._free_pages[-k:]
            del self._free_pages[-k:]
        return taken

    def allocate(self, reqs):
        p = self.page_size
        for req in reqs:
            have, need = pages_for(req.cached_len, p), pages_for(req.device_len, p)
            if need > have:
                for i, page in enumerate(self._take(need - have)):
                    self.page_table[req.table_idx, (have + i) * p:(have + i + 1) * p] = page * p + self._offsets

