"""finish calls _release with final=False: a tail that looked like the start of a stop string is never shown."""

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    def add(self, token_ids):
        if self.stopped:
            return ""
        self.ids.extend(token_ids)
        prefix_text = self._decode(self.ids[self.prefix_offset : self.read_offset])
        new_text = self._decode(self.ids[self.prefix_offset :])
        if len(new_text) <= len(prefix_text) or new_text.endswith(REPLACEMENT):
            return ""
        self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        return self._release(new_text[len(prefix_text) :], final=False)

    def finish(self):
        if self.stopped:
            return ""
        full = self._decode(self.ids)
        return self._release(full[len(self.text) + len(self.held) :], final=False)
