"""A request that cannot be admitted is skipped and the ones behind it are tried (not first come first served)."""


class PrefillManager:
    def schedule_next_batch(self):
        budget = self.chunk_budget
        reqs = []
        waiting = []
        while self.pending and budget > 0:
            req = self.pending[0]
            if req.uid not in self.admitted and not self._try_admit(req):
                waiting.append(self.pending.popleft())
                continue
            remaining = req.prompt_len - req.cached_len
            chunk = min(remaining, budget)
            req.device_len = req.cached_len + chunk
            req.chunked = chunk < remaining
            reqs.append(req)
            budget -= chunk
            if not req.chunked:
                self.pending.popleft()
            else:
                break
        self.pending.extendleft(reversed(waiting))
        return Batch(reqs=reqs, phase="prefill") if reqs else None
