"""Where the new pages go, "page have + i gets ... page_table[row, (have + i) * page_size + o]": the new pages are
written from column cached_len on (the first free position), not from the start of page have."""


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
            if need > have:
                for i, page in enumerate(self._take(need - have)):
                    start = req.cached_len + i * p
                    width = min(p, self.page_table.shape[1] - start)
                    self.page_table[req.table_idx, start:start + width] = (page * p + self._offsets)[:width]
