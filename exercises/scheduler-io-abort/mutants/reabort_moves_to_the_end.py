"""abort, "past that, forget the oldest first (popitem(last=False)); aborting a uid that is remembered already
forgets nothing": a uid aborted again is moved to the newest place, so a later abort forgets another uid first."""

from __future__ import annotations

from minisgl.message import TokensMsg
from minisgl.scheduler.io import _EARLY_ABORTS


class SchedulerIO:
    def abort(self, uid: int) -> None:
        """Stop a request wherever it is: waiting, prefilling in chunks or decoding; its pages go back."""
        req = self.reqs.pop(uid, None)
        if req is None:
            self.early_aborts[uid] = None
            self.early_aborts.move_to_end(uid)
            while len(self.early_aborts) > _EARLY_ABORTS:
                self.early_aborts.popitem(last=False)
            return
        s = self.scheduler
        if req in s.prefill_manager.pending:  # waiting, or admitted with chunks left
            s.prefill_manager.pending.remove(req)
        if req.uid in s.prefill_manager.admitted:  # it holds a table row and pages
            s.decode_manager.remove(req)
            s.finished_reqs.add(req)  # released once no batch in flight computes it; its results are skipped
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))
