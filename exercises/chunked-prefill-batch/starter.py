"""Exercise chunked-prefill-batch: PrefillManager.schedule_next_batch.

Your code runs as if written in minisgl/scheduler/prefill.py (its imports and globals are
available: Batch, Req, deque, ...). The class is the engine's: write the method inside this stub.
"""

from __future__ import annotations

from collections import deque

from minisgl.core import Batch, Req


class PrefillManager:
    pending: deque  # deque[Req]: waiting, in arrival order; a part-prefilled request stays first
    admitted: dict  # uid -> Req: every admitted, unfinished request
    chunk_budget: int  # the most prompt tokens one prefill batch computes

    def schedule_next_batch(self) -> Batch | None:
        """The next prefill batch: requests from the front of pending (admitted first, first come first
        served), each given the rest of its prompt or what is left of the budget; None if empty."""
        raise NotImplementedError("write schedule_next_batch")
