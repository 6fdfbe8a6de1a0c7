"""Exercise scheduler-prepare-batch: Scheduler._prepare_batch.

Your code runs as if written in minisgl/scheduler/scheduler.py (its imports and globals are
available: torch, ForwardInput, Batch, ...). The class is the engine's: write the method inside
this stub.
"""

from __future__ import annotations

import torch

from minisgl.core import Batch
from minisgl.scheduler.scheduler import ForwardInput


class Scheduler:
    token_pool: torch.Tensor  # int32 [max_running_req + 1, max_seq_len]: token ids of each row

    def _prepare_batch(self, batch: Batch) -> ForwardInput:
        """Pad, allocate pages, gather input_ids / positions / out_loc for every position computed, build the
        attention metadata, and say where each real request's sampled token goes (a chunk's: nowhere)."""
        raise NotImplementedError("write _prepare_batch")
