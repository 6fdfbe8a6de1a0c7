"""abort, "it leaves self.reqs": the aborted request stays in self.reqs (looked up, not popped)."""


class SchedulerIO:
    def abort(self, uid):
        req = self.reqs.get(uid)
        if req is None:
            self.early_aborts[uid] = None
            while len(self.early_aborts) > _EARLY_ABORTS:
                self.early_aborts.popitem(last=False)
            return
        s = self.scheduler
        if req in s.prefill_manager.pending:
            s.prefill_manager.pending.remove(req)
        if req.uid in s.prefill_manager.admitted:
            s.decode_manager.remove(req)
            s.finished_reqs.add(req)
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))
