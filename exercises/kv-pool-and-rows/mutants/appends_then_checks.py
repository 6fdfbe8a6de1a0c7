"""free, "raise AssertionError saying so, and change nothing": the row is appended before the check, so a refused
free leaves the row in the free rows (twice)."""

import torch


class KVCachePool:
    def store_kv(self, k, v, out_loc, layer_id):
        loc = out_loc.long()
        self._k[layer_id][loc] = k
        self._v[layer_id][loc] = v

    @property
    def dummy_slot(self):
        return self.dummy_page * self.page_size


class TableManager:
    @property
    def available(self):
        return len(self._free)

    def allocate(self):
        return self._free.pop()

    def free(self, row):
        self._free.append(row)
        assert 0 <= row < self.size and self._free.count(row) == 1, f"row {row} freed twice"
