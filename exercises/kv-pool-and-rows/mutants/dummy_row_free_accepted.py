"""free, "not in 0 .. max_running_req - 1: the dummy's row is refused too": the range check is off by one (<=), so
the dummy's row can be freed and then handed out."""

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
        assert 0 <= row <= self.size and row not in self._free, f"row {row} freed twice"
        self._free.append(row)
