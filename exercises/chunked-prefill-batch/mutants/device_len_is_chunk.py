"""Rule 3, "set req.device_len = req.cached_len + chunk": device_len is set to the chunk alone."""


class PrefillManager:
    def schedule_next_batch(self):
        budget = self.chunk_budget
        reqs = []
        while self.pending and budget > 0:
            req = self.pending[0]
            if req.uid not in self.admitted and not self._try_admit(req):
                break
            remaining = req.prompt_len - req.cached_len
            chunk = min(remaining, budget)
            req.device_len = chunk
            req.chunked = chunk < remaining
            reqs.append(req)
            budget -= chunk
            if not req.chunked:
                self.pending.popleft()
        return Batch(reqs=reqs, phase="prefill") if reqs else None
