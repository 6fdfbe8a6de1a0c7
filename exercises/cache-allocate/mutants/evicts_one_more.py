"""_take, "ask the prefix cache to evict the shortfall (only what is missing)": it asks for one page more than
is missing (n - free + 1), so one cached prefix too many is dropped."""

import torch

from minisgl.core import Req
from minisgl.scheduler.cache import pages_for


class CacheManager:
    def _take(self, n: int) -> list[int]:
        if n > len(self._free_pages):
            self._free_pages.extend(self.prefix_cache.evict(n - len(self._free_pages) + 1))
        if n > len(self._free_pages):
            raise RuntimeError(f"out of KV pages: need {n}, have {len(self._free_pages)} (admission let too much in)")
        taken = self._free_pages[-n:]
        del self._free_pages[-n:]
        return taken

    def allocate(self, reqs: list[Req]) -> None:
        """Give each request pages for positions [cached_len, device_len). Invariant: a request holds exactly the
        pages of positions [0, cached_len), rounded up to whole pages."""
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
