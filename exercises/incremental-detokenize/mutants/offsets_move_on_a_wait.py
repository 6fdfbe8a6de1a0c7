"""The offsets move on even when add waits for the rest of a character: the next window starts inside it."""

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    def add(self, token_ids):
        if self.stopped:
            return ""
        self.ids.extend(token_ids)
        prefix_text = self._decode(self.ids[self.prefix_offset : self.read_offset])
        new_text = self._decode(self.ids[self.prefix_offset :])
        old_read = self.read_offset
        self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        if len(new_text) <= len(prefix_text) or new_text.endswith(REPLACEMENT):
            return ""
        self.prefix_offset = old_read
        return self._release(new_text[len(prefix_text) :], final=False)

    def finish(self):
        if self.stopped:
            return ""
        full = self._decode(self.ids)
        return self._release(full[len(self.text) + len(self.held) :], final=True)
