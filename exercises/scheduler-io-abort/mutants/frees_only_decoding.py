"""abort, "if it is admitted (prefilling in chunks, or decoding)": only a request in the decode manager is
finished, so one prefilling in chunks never gives back its row and pages."""


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
        if req.uid in s.decode_manager.running:
            s.decode_manager.remove(req)
            s.finished_reqs.add(req)
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))
