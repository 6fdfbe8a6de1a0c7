""""Step 1: no free page-table row: return False": refuses when one row is still free (available <= 1)."""

from __future__ import annotations

from minisgl.core import Req
from minisgl.scheduler.cache import pages_for


class PrefillManager:
    def _reserved_pages(self) -> int:
        """Pages that admitted requests may still allocate, up to their max length."""
        p = self.cache.page_size
        return sum(pages_for(r.max_device_len, p) - pages_for(r.cached_len, p) for r in self.admitted.values())

    def _try_admit(self, req: Req) -> bool:
        if self.table.available <= 1:
            return False
        req.table_idx = self.table.allocate()
        self.cache.match_and_lock(req)
        need = pages_for(req.max_device_len, self.cache.page_size) - pages_for(req.cached_len, self.cache.page_size)
        if need > self.cache.available_pages - self._reserved_pages():
            self.cache.unlock(req)
            req.cached_len = req.matched_len = 0
            self.table.free(req.table_idx)
            req.table_idx = -1
            return False
        self._write_prompt(req)
        self.admitted[req.uid] = req
        return True
