"""schedule_next_batch returns an empty decode Batch instead of None when nothing runs."""


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
        return Batch(reqs=list(self.running.values()), phase="decode")
