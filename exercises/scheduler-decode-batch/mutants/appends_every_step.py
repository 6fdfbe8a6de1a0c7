"""The running requests are a list appended to after every forward: a request that keeps running is in the
batch twice."""


class DecodeManager:
    def add_after_forward(self, reqs):
        if not isinstance(self.running, list):
            self.running = []
        for req in reqs:
            if req.can_decode and not req.chunked:
                self.running.append(req)
            else:
                self.running = [r for r in self.running if r.uid != req.uid]

    def remove(self, req):
        if isinstance(self.running, list):
            self.running = [r for r in self.running if r.uid != req.uid]

    def schedule_next_batch(self):
        if not self.running:
            return None
        return Batch(reqs=list(self.running if isinstance(self.running, list) else self.running.values()),
                     phase="decode")
