"""Each add decodes only its own new tokens: a character split across tokens shows as U+FFFD pieces, and a SentencePiece-like decoder loses spaces."""

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    def add(self, token_ids):
        if self.stopped:
            return ""
        self.ids.extend(token_ids)
        self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        return self._release(self._decode(list(token_ids)), final=False)

    def finish(self):
        if self.stopped:
            return ""
        full = self._decode(self.ids)
        return self._release(full[len(self.text) + len(self.held) :], final=True)
