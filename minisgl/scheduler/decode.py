from __future__ import annotations

from minisgl.core import Batch, Req


class DecodeManager:
    """The running requests that decode one token per step."""

    def __init__(self) -> None:
        self.running: dict[int, Req] = {}  # uid -> req, in admission order

    def add_after_forward(self, reqs: list[Req]) -> None:
        """Keep decoding the requests of a batch just launched that have room left (known before their results)."""
        for req in reqs:
            if req.can_decode and not req.chunked:
                self.running[req.uid] = req
            else:
                self.running.pop(req.uid, None)

    def remove(self, req: Req) -> None:
        self.running.pop(req.uid, None)

    def schedule_next_batch(self) -> Batch | None:
        if not self.running:
            return None
        return Batch(reqs=list(self.running.values()), phase="decode")
