"""The FlashInfer backend (CUDA only; flashinfer is imported lazily, here and nowhere else).

Paged KV in NHD layout: the pool's [slots, H, D] viewed as [pages, page_size, H, D]. Prefill uses the ragged-query
paged wrapper; decode uses the decode wrapper, and for CUDA Graph one decode wrapper per batch size built on fixed
buffers (use_cuda_graph=True), re-planned before each replay: plan() writes the new metadata into those buffers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from minisgl.attention.base import BaseAttnBackend, BaseAttnMetadata
from minisgl.core import get_global_ctx

if TYPE_CHECKING:
    from minisgl.core import Batch

_WORKSPACE_BYTES = 128 << 20


@dataclass
class FlashInferMetadata(BaseAttnMetadata):
    cu_seqlens_q: torch.Tensor  # [bs + 1] int32 on the device
    kv_indptr: torch.Tensor  # [bs + 1] int32, host
    kv_indices: torch.Tensor  # pages of each request, concatenated, host
    kv_last_page_len: torch.Tensor  # [bs] int32, host
    wrapper: Any = None

    def get_last_indices(self, bs: int) -> torch.Tensor:
        return (self.cu_seqlens_q[1 : bs + 1] - 1).long()


class FlashInferBackend(BaseAttnBackend):
    supports_cuda_graph = True

    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, page_table: torch.Tensor,
                 device: torch.device, page_size: int, dtype: torch.dtype) -> None:
        import flashinfer  # noqa: F401  (fails here, with a clear message, when it is not installed)

        if device.type != "cuda":
            raise ValueError("attention backend 'fi' (FlashInfer) needs a CUDA device")
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.page_table, self.device, self.page_size, self.dtype = page_table, device, page_size, dtype
        self.workspace = torch.empty(_WORKSPACE_BYTES, dtype=torch.uint8, device=device)
        self.prefill_wrapper = flashinfer.BatchPrefillWithPagedKVCacheWrapper(self.workspace, "NHD")
        self.decode_wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
            self.workspace, "NHD", use_tensor_cores=self._tensor_cores())
        self.graph_wrappers: dict[int, Any] = {}
        self.capture_bs: list[int] = []

    def _tensor_cores(self) -> bool:
        return self.num_heads // self.num_kv_heads >= 4

    def _paged(self, layer_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        kv = get_global_ctx().kv_cache
        shape = (-1, self.page_size, self.num_kv_heads, self.head_dim)
        return kv.k_cache(layer_id).view(shape), kv.v_cache(layer_id).view(shape)

    def _host_metadata(self, batch: Batch) -> FlashInferMetadata:
        p = self.page_size
        seq_lens = [r.device_len for r in batch.padded_reqs]
        rows = [r.table_idx for r in batch.padded_reqs]
        max_len = max(seq_lens)
        table = self.page_table[rows, :max_len:p].cpu() // p  # first slot of each page -> page id
        indices = [table[i, : (n + p - 1) // p] for i, n in enumerate(seq_lens)]
        indptr = [0]
        for t in indices:
            indptr.append(indptr[-1] + len(t))
        cu = [0]
        for r in batch.padded_reqs:
            cu.append(cu[-1] + r.extend_len)
        return FlashInferMetadata(
            cu_seqlens_q=torch.tensor(cu, dtype=torch.int32).to(self.device, non_blocking=True),
            kv_indptr=torch.tensor(indptr, dtype=torch.int32),
            kv_indices=torch.cat(indices).to(torch.int32),
            kv_last_page_len=torch.tensor([(n - 1) % p + 1 for n in seq_lens], dtype=torch.int32),
        )

    def _plan(self, wrapper: Any, meta: FlashInferMetadata, prefill: bool) -> None:
        common = dict(num_qo_heads=self.num_heads, num_kv_heads=self.num_kv_heads, page_size=self.page_size,
                      q_data_type=self.dtype, kv_data_type=self.dtype)
        if prefill:
            wrapper.plan(meta.cu_seqlens_q.cpu(), meta.kv_indptr, meta.kv_indices, meta.kv_last_page_len,
                         head_dim_qk=self.head_dim, causal=True, **common)
        else:
            wrapper.plan(meta.kv_indptr, meta.kv_indices, meta.kv_last_page_len, head_dim=self.head_dim, **common)
        meta.wrapper = wrapper

    def prepare_metadata(self, batch: Batch) -> None:
        meta = self._host_metadata(batch)
        if batch.is_decode:
            graph_wrapper = self.graph_wrappers.get(batch.padded_size)
            # a batch that will replay a graph is planned into that graph's wrapper by prepare_for_replay
            self._plan(self.decode_wrapper if graph_wrapper is None else graph_wrapper, meta, prefill=False)
        else:
            self._plan(self.prefill_wrapper, meta, prefill=True)
        batch.attn_metadata = meta

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer_id: int, batch: Batch) -> torch.Tensor:
        get_global_ctx().kv_cache.store_kv(k, v, batch.out_loc, layer_id)
        meta = batch.attn_metadata
        assert isinstance(meta, FlashInferMetadata)
        return meta.wrapper.run(q, self._paged(layer_id))

    def init_capture_graph(self, max_seq_len: int, bs_list: list[int]) -> None:
        import flashinfer

        max_pages = (max_seq_len + self.page_size - 1) // self.page_size
        for bs in bs_list:
            self.graph_wrappers[bs] = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
                self.workspace, "NHD", use_cuda_graph=True, use_tensor_cores=self._tensor_cores(),
                paged_kv_indptr_buffer=torch.zeros(bs + 1, dtype=torch.int32, device=self.device),
                paged_kv_indices_buffer=torch.zeros(bs * max_pages, dtype=torch.int32, device=self.device),
                paged_kv_last_page_len_buffer=torch.ones(bs, dtype=torch.int32, device=self.device),
            )
        self.capture_bs = sorted(bs_list)

    def prepare_for_capture(self, batch: Batch) -> None:
        bs = batch.size
        assert bs in self.graph_wrappers
        self.prepare_metadata(batch)  # a batch of dummies: plans the graph wrapper of this size

    def prepare_for_replay(self, batch: Batch) -> None:
        meta = batch.attn_metadata
        assert isinstance(meta, FlashInferMetadata)
        self._plan(self.graph_wrappers[batch.padded_size], meta, prefill=False)

    def destroy_capture(self) -> None:
        self.graph_wrappers.clear()
        self.capture_bs = []
