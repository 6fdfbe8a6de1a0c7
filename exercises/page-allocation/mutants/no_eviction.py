"""_take never evicts the prefix cache: it fails as soon as the free list is short."""

import torch


class CacheManager:
    def _take(self, n):
        if n > len(self._free_pages):
            raise RuntimeError(f"out of KV pages: need {n}, have {len(self._free_pages)}")
        taken = self._free_pages[-n:]
        del self._free_pages[-n:]
        return taken

    def allocate(self, reqs):
        p = self.page_size
        rows, starts, pages = [], [], []
        for req in reqs:
            have, need = pages_for(req.cached_len, p), pages_for(req.device_len, p)
            if need > have:
                for i, page in enumerate(self._take(need - have)):
                    rows.append(req.table_idx)
                    starts.append((have + i) * p)
                    pages.append(page)
        if not pages:
            return
        row_t = torch.tensor(rows, dtype=torch.int64, device=self.device)[:, None]
        col_t = torch.tensor(starts, dtype=torch.int64, device=self.device)[:, None] + self._offsets[None, :]
        slot_t = torch.tensor(pages, dtype=torch.int32, device=self.device)[:, None] * p + self._offsets[None, :]
        self.page_table[row_t, col_t] = slot_t
