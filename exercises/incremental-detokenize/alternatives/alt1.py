"""A correct add/finish written differently: add compares the window's two decodes by prefix; finish flushes from
the window (the tokens since prefix_offset) instead of decoding the whole stream."""

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    def _window(self):
        start, read = self.prefix_offset, self.read_offset
        old = self._decode(self.ids[start:read])
        return old, self._decode(self.ids[start:])

    def add(self, token_ids):
        if not self.stopped:
            self.ids += list(token_ids)
            old, new = self._window()
            fresh = new[len(old):]
            if fresh and not fresh.endswith(REPLACEMENT):
                self.prefix_offset = self.read_offset
                self.read_offset = len(self.ids)
                return self._release(fresh, final=False)
        return ""

    def finish(self):
        if self.stopped:
            return ""
        old, new = self._window()
        return self._release(new[len(old):], final=True)
