"""abort, "remember at most _EARLY_ABORTS uids: past that, forget the oldest first": room is made before the
insert, so aborting a uid that is already remembered, with the memory full, forgets the oldest for nothing."""

from __future__ import annotations

from minisgl.message import TokensMsg
from minisgl.scheduler.io import _EARLY_ABORTS


class SchedulerIO:
    def abort(self, uid: int) -> None:
        """Stop a request wherever it is: waiting, prefilling in chunks or decoding; its pages go back."""
        req = self.reqs.pop(uid, None)
        if req is None:
            if len(self.early_aborts) >= _EARLY_ABORTS:
                self.early_aborts.popitem(last=False)
            self.early_aborts[uid] = None
            return
        s = self.scheduler
        if req in s.prefill_manager.pending:  # waiting, or admitted with chunks left
            s.prefill_manager.pending.remove(req)
        if req.uid in s.prefill_manager.admitted:  # it holds a table row and pages
            s.decode_manager.remove(req)
            s.finished_reqs.add(req)  # released once no batch in flight computes it; its results are skipped
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))
