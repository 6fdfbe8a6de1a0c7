"""The FlashAttention backend (CUDA only): FlashAttention-3's ``flash_attn_with_kvcache`` over the paged pool, from
sgl-kernel (``sgl_kernel.flash_attn``) or FlashAttention's own Hopper build (``flash_attn_interface``), imported
lazily, here and nowhere else.

The pool's [slots, H, D] viewed as [pages, page_size, H, D]; a request's pages are its page-table row read every
page_size slots (first slot of a page // page_size); cache_seqlens its tokens after this step; the queries of every
request packed, cu_seqlens_q marking where each begins; causal, aligned bottom-right (a query sees the keys up to
its own position). The metadata is made on the device with no host sync, so CUDA graphs capture the decode step
with fixed buffers copied into before each replay. ``fa_metadata`` is pure torch: tests check it on a CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from minisgl.attention.base import BaseAttnBackend, BaseAttnMetadata
from minisgl.core import get_global_ctx

if TYPE_CHECKING:
    from minisgl.core import Batch, Req


@dataclass
class FAMetadata(BaseAttnMetadata):
    cu_seqlens_q: torch.Tensor  # [bs + 1] int32: request i's new tokens are rows cu[i]:cu[i+1]
    cache_seqlens: torch.Tensor  # [bs] int32: its tokens in the cache after this step
    page_table: torch.Tensor  # [bs, >= pages of the longest] int32: page ids of each request, in order
    max_seqlen_q: int

    def get_last_indices(self, bs: int) -> torch.Tensor:
        return (self.cu_seqlens_q[1 : bs + 1] - 1).long()


def fa_metadata(reqs: list[Req], page_table: torch.Tensor, page_size: int) -> FAMetadata:
    """The metadata of a batch of ``reqs`` (padded ones included) from the engine's page table (KV slots)."""
    device = page_table.device
    seq_lens = [r.device_len for r in reqs]
    rows = torch.tensor([r.table_idx for r in reqs], dtype=torch.int64, device=device)
    width = (max(seq_lens) + page_size - 1) // page_size * page_size
    pages = page_table[rows, :width:page_size] // page_size  # a page's first slot -> its page id
    cu = [0]
    for r in reqs:
        cu.append(cu[-1] + r.extend_len)
    return FAMetadata(cu_seqlens_q=torch.tensor(cu, dtype=torch.int32, device=device),
                      cache_seqlens=torch.tensor(seq_lens, dtype=torch.int32, device=device),
                      page_table=pages.to(torch.int32), max_seqlen_q=max(r.extend_len for r in reqs))


def _flash_attn_with_kvcache() -> Any:
    try:
        from sgl_kernel.flash_attn import flash_attn_with_kvcache
    except ImportError:
        try:
            from flash_attn_interface import flash_attn_with_kvcache
        except ImportError:
            raise ImportError("attention backend 'fa' needs FlashAttention-3: `pip install sgl-kernel` (or "
                              "FlashAttention's hopper build) for the installed torch") from None
    return flash_attn_with_kvcache


@dataclass
class FACaptureData:
    cu_seqlens_q: torch.Tensor
    cache_seqlens: torch.Tensor
    page_table: torch.Tensor


class FlashAttentionBackend(BaseAttnBackend):
    supports_cuda_graph = True

    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, page_table: torch.Tensor,
                 device: torch.device, page_size: int) -> None:
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.page_table, self.device, self.page_size = page_table, device, page_size
        self.scale = head_dim**-0.5
        self.capture: FACaptureData | None = None
        self.capture_bs: list[int] = []
        self._kernel: Any = None

    def prepare_metadata(self, batch: Batch) -> None:
        batch.attn_metadata = fa_metadata(batch.padded_reqs, self.page_table, self.page_size)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer_id: int, batch: Batch) -> torch.Tensor:
        kv = get_global_ctx().kv_cache
        kv.store_kv(k, v, batch.out_loc, layer_id)
        meta = batch.attn_metadata
        assert isinstance(meta, FAMetadata)
        if self._kernel is None:
            self._kernel = _flash_attn_with_kvcache()
        shape = (-1, self.page_size, self.num_kv_heads, self.head_dim)
        return self._kernel(q, kv.k_cache(layer_id).view(shape), kv.v_cache(layer_id).view(shape),
                            cache_seqlens=meta.cache_seqlens, page_table=meta.page_table,
                            cu_seqlens_q=meta.cu_seqlens_q, max_seqlen_q=meta.max_seqlen_q,
                            softmax_scale=self.scale, causal=True)

    def init_capture_graph(self, max_seq_len: int, bs_list: list[int]) -> None:
        assert self.capture is None, "graphs captured twice"
        max_bs, pages = max(bs_list), (max_seq_len + self.page_size - 1) // self.page_size
        self.capture_bs = sorted(bs_list)
        self.capture = FACaptureData(
            cu_seqlens_q=torch.arange(max_bs + 1, dtype=torch.int32, device=self.device),  # decode: one each
            cache_seqlens=torch.ones(max_bs, dtype=torch.int32, device=self.device),
            page_table=torch.zeros(max_bs, pages, dtype=torch.int32, device=self.device),
        )

    def prepare_for_capture(self, batch: Batch) -> None:
        bs = batch.size
        assert bs in self.capture_bs and self.capture is not None
        cap = self.capture
        batch.attn_metadata = FAMetadata(cu_seqlens_q=cap.cu_seqlens_q[: bs + 1], cache_seqlens=cap.cache_seqlens[:bs],
                                         page_table=cap.page_table[:bs], max_seqlen_q=1)

    def prepare_for_replay(self, batch: Batch) -> None:
        meta, bs = batch.attn_metadata, batch.padded_size
        assert isinstance(meta, FAMetadata) and self.capture is not None
        self.capture.cache_seqlens[:bs].copy_(meta.cache_seqlens)
        self.capture.page_table[:bs, : meta.page_table.size(1)].copy_(meta.page_table)

    def destroy_capture(self) -> None:
        self.capture, self.capture_bs = None, []
