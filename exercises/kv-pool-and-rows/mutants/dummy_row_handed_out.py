"""allocate can hand out row max_running_req, the dummy request's."""

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
        if not hasattr(self, "_dummy_given"):
            self._dummy_given = True
            return self.size
        return self._free.pop()

    def free(self, row):
        assert 0 <= row < self.size and row not in self._free, f"row {row} freed twice"
        self._free.append(row)
