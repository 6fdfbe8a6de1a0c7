"""_take, "if fewer than n are free, first ask the prefix cache to evict the shortfall": it does, unless the free
list is empty, where it gives up at once (a full pool whose pages are all in cached prefixes)."""


class CacheManager:
    def _take(self, n):
        if not self._free_pages:
            raise RuntimeError("out of KV pages: none is free")
        if n > len(self._free_pages):
            self._free_pages.extend(self.prefix_cache.evict(n - len(self._free_pages)))
        if n > len(self._free_pages):
            raise RuntimeError("out of KV pages")
        taken = self._free_pages[-n:]
        del self._free_pages[-n:]
        return taken

    def allocate(self, reqs):
        p = self.page_size
        for req in reqs:
            have, need = pages_for(req.cached_len, p), pages_for(req.device_len, p)
            if need > have:
                for i, page in enumerate(self._take(need - have)):
                    self.page_table[req.table_idx, (have + i) * p:(have + i + 1) * p] = page * p + self._offsets
