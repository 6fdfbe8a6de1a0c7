"""Order, "one that stopped running and joins again later goes last, like a new one": the order is that of the
first time a request ever ran, so a request that stopped and rejoins gets its old place back."""


class DecodeManager:
    def add_after_forward(self, reqs):
        if not hasattr(self, "_first_seen"):
            self._first_seen = {}
        for req in reqs:
            if req.can_decode and not req.chunked:
                self._first_seen.setdefault(req.uid, len(self._first_seen))
                self.running[req.uid] = req
            else:
                self.running.pop(req.uid, None)

    def remove(self, req):
        self.running.pop(req.uid, None)

    def schedule_next_batch(self):
        if not self.running:
            return None
        order = getattr(self, "_first_seen", {})
        return Batch(reqs=sorted(self.running.values(), key=lambda r: order.get(r.uid, 0)), phase="decode")
