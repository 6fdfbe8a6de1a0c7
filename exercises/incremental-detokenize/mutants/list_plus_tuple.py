"""add, "token_ids is any sequence of ints": self.ids = self.ids + token_ids, a TypeError when the ids come as a tuple."""

from __future__ import annotations

from collections.abc import Sequence

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    def add(self, token_ids: Sequence[int]) -> str:
        """Append tokens (usually one); return the new text that is final now ("" if none)."""
        if self.stopped:
            return ""
        self.ids = self.ids + token_ids
        prefix_text = self._decode(self.ids[self.prefix_offset : self.read_offset])
        new_text = self._decode(self.ids[self.prefix_offset :])
        if len(new_text) <= len(prefix_text) or new_text.endswith(REPLACEMENT):
            return ""  # nothing new yet, or the last character may still be completed by the next tokens
        self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        return self._release(new_text[len(prefix_text) :], final=False)

    def finish(self) -> str:
        """The stream ended: return all text not yet returned (call once)."""
        if self.stopped:
            return ""
        full = self._decode(self.ids)  # once per request: the window held back an unfinished last character
        return self._release(full[len(self.text) + len(self.held) :], final=True)
