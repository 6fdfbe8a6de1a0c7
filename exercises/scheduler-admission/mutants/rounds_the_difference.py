"""Rounds the difference: pages_for(max_device_len - cached_len) instead of pages_for(max_device_len) -
pages_for(cached_len). With pages of more than one token, a request whose cached part ends inside a page needs a
page more than that (the rest of that page is already its own, the next tokens start a new page count)."""


class PrefillManager:
    def _reserved_pages(self):
        p = self.cache.page_size
        return sum(pages_for(r.max_device_len - r.cached_len, p) for r in self.admitted.values())

    def _try_admit(self, req):
        if self.table.available == 0:
            return False
        req.table_idx = self.table.allocate()
        self.cache.match_and_lock(req)
        need = pages_for(req.max_device_len - req.cached_len, self.cache.page_size)
        if need > self.cache.available_pages - self._reserved_pages():
            self.cache.unlock(req)
            req.cached_len = req.matched_len = 0
            self.table.free(req.table_idx)
            req.table_idx = -1
            return False
        self._write_prompt(req)
        self.admitted[req.uid] = req
        return True
