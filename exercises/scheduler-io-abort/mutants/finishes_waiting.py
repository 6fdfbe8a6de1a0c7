"""abort, "a waiting request ... must not join finished_reqs": every aborted request joins finished_reqs,
waiting ones too (the loop then releases what they never held)."""


class SchedulerIO:
    def abort(self, uid):
        req = self.reqs.pop(uid, None)
        if req is None:
            self.early_aborts[uid] = None
            while len(self.early_aborts) > _EARLY_ABORTS:
                self.early_aborts.popitem(last=False)
            return
        s = self.scheduler
        if req in s.prefill_manager.pending:
            s.prefill_manager.pending.remove(req)
        s.decode_manager.remove(req)
        s.finished_reqs.add(req)
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))
