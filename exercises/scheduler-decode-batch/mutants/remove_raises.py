"""remove() deletes with del: removing a request that is not running raises KeyError."""


class DecodeManager:
    def add_after_forward(self, reqs):
        for req in reqs:
            if req.can_decode and not req.chunked:
                self.running[req.uid] = req
            else:
                self.running.pop(req.uid, None)

    def remove(self, req):
        del self.running[req.uid]

    def schedule_next_batch(self):
        if not self.running:
            return None
        return Batch(reqs=list(self.running.values()), phase="decode")
