"""Exercise fi-metadata: FlashInferBackend._host_metadata.

Your code runs as if written in minisgl/attention/fi.py (its imports and globals are available:
torch, FlashInferMetadata, Batch). The class is the engine's: write the method inside this stub.
Nothing here needs flashinfer itself.
"""

from __future__ import annotations

import torch

from minisgl.attention.fi import FlashInferMetadata
from minisgl.core import Batch


class FlashInferBackend:
    page_table: torch.Tensor  # int32 [rows, max_seq_len]: KV slot of each position
    page_size: int
    device: torch.device

    def _host_metadata(self, batch: Batch) -> FlashInferMetadata:
        """CSR page metadata of batch.padded_reqs: kv_indptr [bs + 1], kv_indices (page ids), kv_last_page_len
        [bs] (1..page_size), and cu_seqlens_q [bs + 1] (new tokens) on self.device; all int32."""
        raise NotImplementedError("write _host_metadata")
