"""emit, "skip it if it was chunked when the batch was made": chunks are not skipped; the last prompt token is
sent as if it were a new one."""


class SchedulerIO:
    def emit(self, fwd, out):
        s = self.scheduler
        skipped = set(s.finished_reqs)
        s._process(fwd, out)
        uids, tokens, finish = [], [], []
        for req in fwd.batch.reqs:
            if req in skipped:
                continue
            token = req.input_ids[-1]
            reason = None
            if req in s.finished_reqs:
                eos = not req.sampling_params.ignore_eos and token in s.eos_ids
                reason = "stop" if eos else "length"
                self.reqs.pop(req.uid, None)
            uids.append(req.uid)
            tokens.append(token)
            finish.append(reason)
        if uids:
            self.outbox.send(TokensMsg(uids=uids, tokens=tokens, finish=finish))
