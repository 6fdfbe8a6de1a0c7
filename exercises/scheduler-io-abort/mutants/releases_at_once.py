"""abort, "never release anything yourself": the row, pages and admission of an admitted request are given
back at once, while a batch in flight may still compute it."""


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
        if req.uid in s.prefill_manager.admitted:
            s.decode_manager.remove(req)
            s.cache_manager.release(req)
            s.table_manager.free(req.table_idx)
            s.prefill_manager.finish(req)
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))
