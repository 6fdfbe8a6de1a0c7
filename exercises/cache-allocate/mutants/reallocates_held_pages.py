"""allocate gives each request pages for all of [0, device_len), forgetting the pages it already holds."""


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
            need = pages_for(req.device_len, p)
            if need == 0:
                continue
            for i, page in enumerate(self._take(need)):
                self.page_table[req.table_idx, i * p:(i + 1) * p] = page * p + self._offsets
