""""every other request of the batch is no longer running (removed if it was)": add_after_forward adds the
requests that decode but never drops one that was running and has stopped."""


class DecodeManager:
    def add_after_forward(self, reqs):
        for req in reqs:
            if req.can_decode and not req.chunked:
                self.running[req.uid] = req

    def remove(self, req):
        self.running.pop(req.uid, None)

    def schedule_next_batch(self):
        if not self.running:
            return None
        return Batch(reqs=list(self.running.values()), phase="decode")
