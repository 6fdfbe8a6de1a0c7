"""A correct emit written differently: decide what to send first (rows of uid, token, reason), then build the message
with zip; the reason comes from a helper method."""


class SchedulerIO:
    def _reason(self, req, token):
        if req not in self.scheduler.finished_reqs:
            return None
        if token in self.scheduler.eos_ids and not req.sampling_params.ignore_eos:
            return "stop"
        return "length"

    def emit(self, fwd, out):
        before = {id(r) for r in self.scheduler.finished_reqs}
        self.scheduler._process(fwd, out)
        rows = []
        for req, chunk in zip(fwd.batch.reqs, fwd.chunked):
            if chunk or id(req) in before:
                continue
            token = int(req.input_ids[-1])
            reason = self._reason(req, token)
            if reason is not None:
                del self.reqs[req.uid]
            rows.append((req.uid, token, reason))
        if not rows:
            return
        uids, tokens, finish = (list(col) for col in zip(*rows))
        self.outbox.send(TokensMsg(uids=uids, tokens=tokens, finish=finish))
