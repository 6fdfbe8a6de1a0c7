"""abort, "a uid that is not here ... remember it": an abort that comes before its request is dropped, so the
request runs when it arrives."""


class SchedulerIO:
    def abort(self, uid):
        req = self.reqs.pop(uid, None)
        if req is None:
            return
        s = self.scheduler
        if req in s.prefill_manager.pending:
            s.prefill_manager.pending.remove(req)
        if req.uid in s.prefill_manager.admitted:
            s.decode_manager.remove(req)
            s.finished_reqs.add(req)
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))
