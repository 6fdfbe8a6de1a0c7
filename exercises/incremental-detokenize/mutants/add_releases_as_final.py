"""add calls _release with final=True: a tail that could start a stop string is shown at once, so a stop string split across tokens is missed."""

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
        return self._release(new_text[len(prefix_text) :], final=True)

    def finish(self):
        if self.stopped:
            return ""
        full = self._decode(self.ids)
        return self._release(full[len(self.text) + len(self.held) :], final=True)
