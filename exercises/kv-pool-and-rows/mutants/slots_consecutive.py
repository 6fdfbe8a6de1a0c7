"""store_kv, "write k[i] and v[i] into slot out_loc[i]": the slots are taken as consecutive from out_loc[0], so tokens
land in slots nobody asked for."""

import torch


class KVCachePool:
    def store_kv(self, k, v, out_loc, layer_id):
        start = int(out_loc[0])
        loc = torch.arange(start, start + out_loc.shape[0])
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
        assert 0 <= row < self.size and row not in self._free, f"row {row} freed twice"
        self._free.append(row)
