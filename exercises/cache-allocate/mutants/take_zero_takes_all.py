"""_take(0), "it must return [] and take nothing": allocate calls _take for every request, and _take's
free_pages[-n:] with n = 0 hands out the whole free list."""


class CacheManager:
    def _take(self, n):
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
            for i, page in enumerate(self._take(max(0, need - have))):
                if have + i < need:
                    self.page_table[req.table_idx, (have + i) * p:(have + i + 1) * p] = page * p + self._offsets
