"""The PyTorch reference backend: paged KV, GQA, bottom-right causal mask. It checks answers; it is not fast.

Its forward reads lengths back to the host (.tolist()), which CUDA Graph capture forbids: on CUDA the engine turns
graphs off for it. On a CPU, EmulatedGraph re-runs it, so the fixed-buffer contract is still checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from minisgl.attention.base import BaseAttnBackend, BaseAttnMetadata
from minisgl.attention.utils import attend
from minisgl.core import get_global_ctx

if TYPE_CHECKING:
    from minisgl.core import Batch


@dataclass
class TorchAttnMetadata(BaseAttnMetadata):
    cu_seqlens_q: torch.Tensor  # [bs + 1] int32: request i's new tokens are rows cu[i]:cu[i+1]
    cache_seqlens: torch.Tensor  # [bs] int32: tokens of request i in the KV cache after this step
    page_table: torch.Tensor  # [bs, >= max(cache_seqlens)] int32: KV slot of each position
    max_seqlen_q: int

    def get_last_indices(self, bs: int) -> torch.Tensor:
        return (self.cu_seqlens_q[1 : bs + 1] - 1).long()


@dataclass
class TorchCaptureData:
    cu_seqlens_q: torch.Tensor
    seq_lens: torch.Tensor
    page_table: torch.Tensor


class TorchAttnBackend(BaseAttnBackend):
    supports_cuda_graph = False  # on CUDA; on a CPU it runs under EmulatedGraph

    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, page_table: torch.Tensor,
                 device: torch.device) -> None:
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.scale = head_dim**-0.5
        self.page_table = page_table  # the engine's [max_running_req + 1, max_seq_len]
        self.device = device
        self.capture: TorchCaptureData | None = None
        self.capture_bs: list[int] = []

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer_id: int, batch: Batch) -> torch.Tensor:
        kv = get_global_ctx().kv_cache
        kv.store_kv(k, v, batch.out_loc, layer_id)
        meta = batch.attn_metadata
        assert isinstance(meta, TorchAttnMetadata)
        k_cache, v_cache = kv.k_cache(layer_id), kv.v_cache(layer_id)
        cu, lens = meta.cu_seqlens_q.tolist(), meta.cache_seqlens.tolist()
        outs = []
        for i, seq_len in enumerate(lens):
            slots = meta.page_table[i, :seq_len].long()
            outs.append(attend(q[cu[i] : cu[i + 1]], k_cache[slots], v_cache[slots], self.scale))
        return torch.cat(outs) if len(outs) > 1 else outs[0]

    def prepare_metadata(self, batch: Batch) -> None:
        reqs = batch.padded_reqs
        seqlens_q = [r.extend_len for r in reqs]
        cache_seqlens = [r.device_len for r in reqs]
        cu = [0]
        for n in seqlens_q:
            cu.append(cu[-1] + n)
        rows = torch.tensor([r.table_idx for r in reqs], dtype=torch.int64, device=self.device)
        batch.attn_metadata = TorchAttnMetadata(
            cu_seqlens_q=torch.tensor(cu, dtype=torch.int32, device=self.device),
            cache_seqlens=torch.tensor(cache_seqlens, dtype=torch.int32, device=self.device),
            page_table=self.page_table[rows, : max(cache_seqlens)],
            max_seqlen_q=max(seqlens_q),
        )

    def init_capture_graph(self, max_seq_len: int, bs_list: list[int]) -> None:
        assert self.capture is None, "graphs captured twice"
        max_bs = max(bs_list)
        self.capture_bs = sorted(bs_list)
        self.capture = TorchCaptureData(
            cu_seqlens_q=torch.arange(max_bs + 1, dtype=torch.int32, device=self.device),
            seq_lens=torch.ones(max_bs, dtype=torch.int32, device=self.device),
            page_table=torch.zeros(max_bs, max_seq_len, dtype=torch.int32, device=self.device),
        )

    def prepare_for_capture(self, batch: Batch) -> None:
        bs = batch.size
        assert bs in self.capture_bs and self.capture is not None
        cap = self.capture
        batch.attn_metadata = TorchAttnMetadata(
            cu_seqlens_q=cap.cu_seqlens_q[: bs + 1],  # always [0, 1, ..., bs] during decode
            cache_seqlens=cap.seq_lens[:bs],
            page_table=cap.page_table[:bs, :],
            max_seqlen_q=1,
        )

    def prepare_for_replay(self, batch: Batch) -> None:
        metadata, bs = batch.attn_metadata, batch.padded_size
        assert isinstance(metadata, TorchAttnMetadata) and self.capture is not None
        table_len = metadata.page_table.size(1)
        self.capture.seq_lens[:bs].copy_(metadata.cache_seqlens)
        self.capture.page_table[:bs, :table_len].copy_(metadata.page_table)

    def destroy_capture(self) -> None:
        self.capture, self.capture_bs = None, []


@dataclass
class DecodeInputs:
    """What every layer of one decode forward shares, made once at its first layer (layer 0)."""

    out_loc: torch.Tensor  # [B] int64: the KV slot each request writes
    slots: torch.Tensor  # [B * W] int64: the page table's window, flattened for index_select
    mask: torch.Tensor  # [B, 1, 1, W] in the KV dtype: 0 where a key is valid (position < seq_len), -inf past it


class TorchStaticAttnBackend(TorchAttnBackend):
    """The reference prefill, plus a decode with no host sync and static shapes (a key window as wide as the page
    table given): this one CUDA graphs can capture with nothing but PyTorch. It is also the faster decode on a CPU."""

    supports_cuda_graph = True

    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, page_table: torch.Tensor,
                 device: torch.device) -> None:
        super().__init__(num_heads, num_kv_heads, head_dim, page_table, device)
        self._decode: DecodeInputs | None = None

    def _decode_inputs(self, batch: Batch, meta: TorchAttnMetadata, dtype: torch.dtype) -> DecodeInputs:
        # every decode forward starts at layer 0 and reads its batch's buffers afresh there (graph replays too)
        from minisgl.attention.utils import decode_mask

        b, w = meta.page_table.shape
        return DecodeInputs(out_loc=batch.out_loc.long(), slots=meta.page_table.reshape(b * w).long(),
                            mask=decode_mask(meta.cache_seqlens, w, dtype))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer_id: int, batch: Batch) -> torch.Tensor:
        if not batch.is_decode:
            return super().forward(q, k, v, layer_id, batch)
        from minisgl.attention.utils import attend_decode_masked

        kv = get_global_ctx().kv_cache
        meta = batch.attn_metadata
        assert isinstance(meta, TorchAttnMetadata)
        if layer_id == 0 or self._decode is None:
            self._decode = self._decode_inputs(batch, meta, kv.k_cache(layer_id).dtype)
        d = self._decode
        kv.store_kv(k, v, d.out_loc, layer_id)
        b, w = meta.page_table.shape
        k_cache, v_cache = kv.k_cache(layer_id), kv.v_cache(layer_id)
        keys = k_cache.index_select(0, d.slots).view(b, w, *k_cache.shape[1:])  # the paged gather, one kernel
        values = v_cache.index_select(0, d.slots).view(b, w, *v_cache.shape[1:])
        return attend_decode_masked(q, keys, values, d.mask, self.scale)
