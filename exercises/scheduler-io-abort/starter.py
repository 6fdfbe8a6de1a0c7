"""Exercise scheduler-io-abort: SchedulerIO.abort.

Your code runs as if written in minisgl/scheduler/io.py (its imports and globals are available: TokensMsg,
_EARLY_ABORTS, ...). The class is the engine's: write the method inside this stub. Already there: self.scheduler,
self.outbox, self.reqs (uid -> Req), self.early_aborts (an OrderedDict).
"""

from __future__ import annotations

from minisgl.message import TokensMsg
from minisgl.scheduler.io import _EARLY_ABORTS


class SchedulerIO:
    def abort(self, uid: int) -> None:
        """Stop request `uid` wherever it is (waiting, prefilling in chunks or decoding) and tell its client; an abort
        for a uid that is not here is remembered (at most _EARLY_ABORTS, the oldest forgotten first)."""
        raise NotImplementedError("write abort")
