"""free, "already free (freed twice) ... raise AssertionError": only the row freed last is checked, so a row
freed earlier, or never handed out, is accepted and sits twice in the free rows."""

import torch


class KVCachePool:
    def store_kv(self, k: torch.Tensor, v: torch.Tensor, out_loc: torch.Tensor, layer_id: int) -> None:
        loc = out_loc.long()
        self._k[layer_id][loc] = k
        self._v[layer_id][loc] = v

    @property
    def dummy_slot(self) -> int:
        return self.dummy_page * self.page_size


class TableManager:
    def allocate(self) -> int:
        return self._free.pop()

    def free(self, row: int) -> None:
        assert 0 <= row < self.size and (not self._free or row != self._free[-1]), f"row {row} freed twice"
        self._free.append(row)

    @property
    def available(self) -> int:
        return len(self._free)
