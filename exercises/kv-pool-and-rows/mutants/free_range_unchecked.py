"""free, "A row that is out of range ... raise AssertionError": only a double free is refused; the dummy's row or
-1 go into the free rows."""

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
        assert row not in self._free, f"row {row} freed twice"
        self._free.append(row)
