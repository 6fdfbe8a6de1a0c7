"""The paged KV pool: one K and one V buffer per layer, addressed by slot (page * page_size + offset)."""

from __future__ import annotations

import torch


class KVCachePool:
    def __init__(self, num_layers: int, num_pages: int, page_size: int, num_kv_heads: int, head_dim: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        # num_pages real pages, plus one more at index num_pages reserved for the dummy request
        self.num_pages, self.page_size = num_pages, page_size
        self.dummy_page = num_pages
        slots = (num_pages + 1) * page_size
        self._k = torch.zeros(num_layers, slots, num_kv_heads, head_dim, dtype=dtype, device=device)
        self._v = torch.zeros(num_layers, slots, num_kv_heads, head_dim, dtype=dtype, device=device)

    @property
    def dummy_slot(self) -> int:
        return self.dummy_page * self.page_size

    def k_cache(self, layer_id: int) -> torch.Tensor:
        return self._k[layer_id]

    def v_cache(self, layer_id: int) -> torch.Tensor:
        return self._v[layer_id]

    def store_kv(self, k: torch.Tensor, v: torch.Tensor, out_loc: torch.Tensor, layer_id: int) -> None:
        loc = out_loc.long()
        self._k[layer_id][loc] = k
        self._v[layer_id][loc] = v

    @staticmethod
    def bytes_per_page(num_layers: int, page_size: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype) -> int:
        return 2 * num_layers * page_size * num_kv_heads * head_dim * torch.empty((), dtype=dtype).element_size()


class TritonKVCachePool(KVCachePool):
    """The pool on CUDA where Triton is installed: a batch's K and V stored by one kernel (minisgl/kernel)."""

    def store_kv(self, k: torch.Tensor, v: torch.Tensor, out_loc: torch.Tensor, layer_id: int) -> None:
        from minisgl.kernel import store_kv

        store_kv(self._k[layer_id], self._v[layer_id], k, v, out_loc)


OWN_STORE_KV = KVCachePool.store_kv  # the engine's; the judge splices a learner's over it, then the kernel stays out
