"""free, "raise AssertionError saying so": a bare assert with no message, so the error says nothing."""

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
        assert 0 <= row < self.size and row not in self._free
        self._free.append(row)

    @property
    def available(self) -> int:
        return len(self._free)
