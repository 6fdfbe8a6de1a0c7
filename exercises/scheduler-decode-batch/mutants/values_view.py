"""Form, "Batch(reqs=[...])": the batch holds the live dict view self.running.values(), not a list: it is not
a list, and it changes when requests join or leave after the batch was made."""


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
        return Batch(reqs=self.running.values(), phase="decode")
