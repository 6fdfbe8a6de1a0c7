"""A correct emit that tells "finished before this batch" from self.reqs instead of a copy of finished_reqs: a request
leaves self.reqs when it finishes (here) or is aborted, so one that is no longer there finished earlier."""


class SchedulerIO:
    def emit(self, fwd, out):
        s = self.scheduler
        here = [req.uid in self.reqs for req in fwd.batch.reqs]  # before processing
        s._process(fwd, out)
        uids, tokens, finish = [], [], []
        for req, chunk, present in zip(fwd.batch.reqs, fwd.chunked, here):
            if chunk or not present:
                continue
            token = req.input_ids[-1]
            if req not in s.finished_reqs:
                reason = None
            elif token in s.eos_ids and not req.sampling_params.ignore_eos:
                reason = "stop"
            else:
                reason = "length"
            if reason is not None:
                self.reqs.pop(req.uid)
            uids.append(req.uid)
            tokens.append(token)
            finish.append(reason)
        if uids:
            self.outbox.send(TokensMsg(uids=uids, tokens=tokens, finish=finish))
