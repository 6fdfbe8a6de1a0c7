"""The attention backend interface: forward, metadata, and the three CUDA Graph hooks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from minisgl.core import Batch


class BaseAttnMetadata(ABC):
    @abstractmethod
    def get_last_indices(self, bs: int) -> torch.Tensor:
        """Row of each request's last token in the flattened batch (where prefill logits are taken)."""


class BaseAttnBackend(ABC):
    supports_cuda_graph: bool = True  # False: the engine keeps CUDA Graph off on CUDA for this backend

    @abstractmethod
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer_id: int, batch: Batch) -> torch.Tensor:
        """Store k/v at batch.out_loc, then attend q over each request's cached keys. q: [T, Hq, D]."""

    @abstractmethod
    def prepare_metadata(self, batch: Batch) -> None:
        """Build batch.attn_metadata for batch.padded_reqs (called once per batch, before forward)."""

    @abstractmethod
    def init_capture_graph(self, max_seq_len: int, bs_list: list[int]) -> None:
        """Allocate the fixed buffers that captured graphs will read their metadata from."""

    @abstractmethod
    def prepare_for_capture(self, batch: Batch) -> None:
        """At capture: point batch.attn_metadata at the fixed buffers."""

    @abstractmethod
    def prepare_for_replay(self, batch: Batch) -> None:
        """Before replay: copy this batch's metadata into the fixed buffers."""

    def destroy_capture(self) -> None:  # noqa: B027  (a backend without capture buffers has nothing to drop)
        """Drop the fixed buffers made by init_capture_graph."""
