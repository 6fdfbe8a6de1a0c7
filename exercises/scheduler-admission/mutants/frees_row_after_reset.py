"""Step 4, "the row freed is the one taken": it sets table_idx to -1 first, then frees req.table_idx (-1)."""


class PrefillManager:
    def _reserved_pages(self):
        p = self.cache.page_size
        return sum(pages_for(r.max_device_len, p) - pages_for(r.cached_len, p) for r in self.admitted.values())

    def _try_admit(self, req):
        if self.table.available == 0:
            return False
        req.table_idx = self.table.allocate()
        self.cache.match_and_lock(req)
        p = self.cache.page_size
        need = pages_for(req.max_device_len, p) - pages_for(req.cached_len, p)
        if need > self.cache.available_pages - self._reserved_pages():
            self.cache.unlock(req)
            req.cached_len = req.matched_len = 0
            req.table_idx = -1
            self.table.free(req.table_idx)
            return False
        self._write_prompt(req)
        self.admitted[req.uid] = req
        return True
