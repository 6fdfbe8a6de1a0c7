"""Exercise fa-metadata: fa_metadata, the metadata of FlashAttention-3's flash_attn_with_kvcache.

Your code runs as if written in minisgl/attention/fa.py (its imports and globals are available: torch,
FAMetadata, Req). Nothing here needs FlashAttention itself: the tests run on a CPU.
"""

from __future__ import annotations

import torch

from minisgl.attention.fa import FAMetadata
from minisgl.core import Req


def fa_metadata(reqs: list[Req], page_table: torch.Tensor, page_size: int) -> FAMetadata:
    """The metadata of the requests ``reqs`` (dummy ones included), on page_table's device, no host sync:
    page_table [bs, most pages of any request] int32 (page ids, read every page_size slots of row table_idx),
    cache_seqlens [bs] int32 (device_len), cu_seqlens_q [bs + 1] int32 (running sum of the new tokens, from 0),
    max_seqlen_q (an int: the most new tokens of one request)."""
    raise NotImplementedError("write fa_metadata")
