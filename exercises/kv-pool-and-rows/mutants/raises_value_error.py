"""free, "raise AssertionError (an assert statement ... or raise AssertionError(...))": a bad row raises ValueError."""

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
        if not (0 <= row < self.size) or row in self._free:
            raise ValueError(f"row {row} freed twice or out of range")
        self._free.append(row)
