"""Rule 6, "with the requests in the order they were taken": each request is put at the front of the batch."""


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
            req.device_len = req.cached_len + chunk
            req.chunked = chunk < remaining
            reqs.insert(0, req)
            budget -= chunk
            if not req.chunked:
                self.pending.popleft()
        return Batch(reqs=reqs, phase="prefill") if reqs else None
