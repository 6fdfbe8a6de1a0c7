"""Exercise scheduler-decode-batch: DecodeManager.add_after_forward, remove and schedule_next_batch.

Your code runs as if written in minisgl/scheduler/decode.py (its imports and globals are
available: Batch, Req). The class is the engine's: its __init__ sets self.running = {} (uid -> Req).
"""

from __future__ import annotations

from minisgl.core import Batch, Req


class DecodeManager:
    running: dict[int, Req]  # uid -> req, in the order they started running

    def add_after_forward(self, reqs: list[Req]) -> None:
        """Keep decoding the requests of a batch just launched that have room left and are not chunked;
        the others stop running."""
        raise NotImplementedError("write add_after_forward")

    def remove(self, req: Req) -> None:
        """req stops running (no error if it is not running)."""
        raise NotImplementedError("write remove")

    def schedule_next_batch(self) -> Batch | None:
        """None when nothing runs; else a decode Batch of every running request, once, in order."""
        raise NotImplementedError("write schedule_next_batch")
