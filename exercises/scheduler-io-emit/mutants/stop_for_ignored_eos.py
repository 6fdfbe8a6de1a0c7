"""emit, "an EOS token it does not ignore": "stop" for every EOS token, even when the request ignores EOS."""


class SchedulerIO:
    def emit(self, fwd, out):
        s = self.scheduler
        skipped = set(s.finished_reqs)
        s._process(fwd, out)
        uids, tokens, finish = [], [], []
        for i, req in enumerate(fwd.batch.reqs):
            if fwd.chunked[i] or req in skipped:
                continue
            token = req.input_ids[-1]
            reason = None
            if req in s.finished_reqs:
                eos = token in s.eos_ids
                reason = "stop" if eos else "length"
                self.reqs.pop(req.uid, None)
            uids.append(req.uid)
            tokens.append(token)
            finish.append(reason)
        if uids:
            self.outbox.send(TokensMsg(uids=uids, tokens=tokens, finish=finish))
