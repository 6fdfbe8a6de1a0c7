"""finish only flushes what _release holds: a character the stream left unfinished (its U+FFFD) is lost."""

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
        return self._release("", final=True)
