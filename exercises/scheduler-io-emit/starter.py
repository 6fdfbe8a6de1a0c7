"""Exercise scheduler-io-emit: SchedulerIO.emit.

Your code runs as if written in minisgl/scheduler/io.py (its imports and globals are available: TokensMsg,
ForwardInput, ...). The class is the engine's: write the method inside this stub. Already there: self.scheduler,
self.outbox, self.reqs (uid -> Req, every request not finished).
"""

from __future__ import annotations

from typing import Any

from minisgl.message import TokensMsg
from minisgl.scheduler.scheduler import ForwardInput


class SchedulerIO:
    def emit(self, fwd: ForwardInput, out: Any) -> None:
        """Process a finished batch (self.scheduler._process) and send, in one TokensMsg, each request's new token and
        how it finished (None, "stop" or "length"); chunks and requests finished before this batch send nothing."""
        raise NotImplementedError("write emit")
