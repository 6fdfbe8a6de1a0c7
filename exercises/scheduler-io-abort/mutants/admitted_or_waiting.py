"""abort, "prefilling in chunks: admitted and still first in pending": the request is treated as either admitted or
waiting (if ... else), so one prefilling in chunks is finished but stays in the queue, and its next chunk runs."""


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
        else:
            s.prefill_manager.pending.remove(req)
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))
