"""A correct abort written differently: look the request up first, rebuild the queue without it, and trim the early
aborts with a loop over the oldest keys."""

from collections import deque


class SchedulerIO:
    def abort(self, uid):
        if uid not in self.reqs:
            self.early_aborts[uid] = None
            excess = len(self.early_aborts) - _EARLY_ABORTS
            for old in list(self.early_aborts)[:max(excess, 0)]:
                del self.early_aborts[old]
            return
        req = self.reqs[uid]
        del self.reqs[uid]
        pm = self.scheduler.prefill_manager
        pm.pending = deque(r for r in pm.pending if r is not req)
        admitted = uid in pm.admitted
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))
        if admitted:
            self.scheduler.decode_manager.running.pop(uid, None)
            self.scheduler.finished_reqs.add(req)
