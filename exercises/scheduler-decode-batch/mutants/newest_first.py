"""schedule_next_batch puts the newest running request first (the order is reversed)."""


class DecodeManager:
    def add_after_forward(self, reqs):
        for req in reqs:
            if req.can_decode and not req.chunked:
                self.running[req.uid] = req
            else:
                self.running.pop(req.uid, None)

    def remove(self, req):
        self.running.pop(req.uid, None)

    def schedule_next_batch(self):
        if not self.running:
            return None
        return Batch(reqs=list(reversed(list(self.running.values()))), phase="decode")
