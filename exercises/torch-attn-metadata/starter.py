"""Exercise torch-attn-metadata: TorchAttnBackend.prepare_metadata and TorchAttnMetadata.get_last_indices.

Your code runs as if written in minisgl/attention/torch_backend.py (torch and TorchAttnMetadata are available).
The backend has self.page_table (the engine's [rows, max_seq_len] int32 page table) and self.device.
"""

from __future__ import annotations

import torch

from minisgl.attention.torch_backend import TorchAttnMetadata
from minisgl.core import Batch


class TorchAttnMetadata:
    def get_last_indices(self, bs: int) -> torch.Tensor:
        """The flat-batch row of the last new token of each of the first bs requests (int64)."""
        raise NotImplementedError("write get_last_indices")


class TorchAttnBackend:
    def prepare_metadata(self, batch: Batch) -> None:
        """batch.attn_metadata = TorchAttnMetadata(cu_seqlens_q, cache_seqlens, page_table, max_seqlen_q) for
        batch.padded_reqs: offsets of the new tokens, device_len of each, their page-table rows cut to the longest,
        the largest extend_len."""
        raise NotImplementedError("write prepare_metadata")
