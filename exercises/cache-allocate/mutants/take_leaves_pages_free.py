"""_take, "remove n pages from the free list and return them": it returns n free pages but leaves them on the list."""


class CacheManager:
    def _take(self, n):
        if n > len(self._free_pages):
            self._free_pages.extend(self.prefix_cache.evict(n - len(self._free_pages)))
        if n > len(self._free_pages):
            raise RuntimeError("out of KV pages")
        return self._free_pages[:n]

    def allocate(self, reqs):
        p = self.page_size
        for req in reqs:
            have, need = pages_for(req.cached_len, p), pages_for(req.device_len, p)
            if need > have:
                for i, page in enumerate(self._take(need - have)):
                    self.page_table[req.table_idx, (have + i) * p:(have + i + 1) * p] = page * p + self._offsets

