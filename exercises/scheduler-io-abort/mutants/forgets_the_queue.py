"""abort, "if it is in pending ... it leaves pending": the request is not taken out of the queue, so a waiting
request is admitted and runs anyway (and a chunked prefill goes on)."""


class SchedulerIO:
    def abort(self, uid):
        req = self.reqs.pop(uid, None)
        if req is None:
            self.early_aborts[uid] = None
            while len(self.early_aborts) > _EARLY_ABORTS:
                self.early_aborts.popitem(last=False)
            return
        s = self.scheduler
        if req.uid in s.prefill_manager.admitted:
            s.decode_manager.remove(req)
            s.finished_reqs.add(req)
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))
