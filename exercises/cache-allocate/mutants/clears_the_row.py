"""Held pages, "entries of pages the request already holds are left as they are": allocate clears the row's
entries from cached_len on before writing the new pages (the tail of the last held page is zeroed)."""


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
            self.page_table[req.table_idx, req.cached_len:] = 0
            have, need = pages_for(req.cached_len, p), pages_for(req.device_len, p)
            if need > have:
                for i, page in enumerate(self._take(need - have)):
                    self.page_table[req.table_idx, (have + i) * p:(have + i + 1) * p] = page * p + self._offsets
