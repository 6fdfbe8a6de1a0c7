"""Exercise incremental-detokenize: IncrementalDetokenizer.add and IncrementalDetokenizer.finish.

Your code runs as if written in minisgl/tokenizer/detokenize.py: REPLACEMENT ("\ufffd") is there. The class is the
engine's: __init__ has set self.tokenizer, self.stop, self.skip_special_tokens, self.ids = [], self.prefix_offset = 0,
self.read_offset = 0, self.held = "", self.text = "", self.stopped = False, self.stop_reason = None; the helpers
self._decode(ids) and self._release(chunk, final) are the engine's (see the statement).
"""

from __future__ import annotations

from collections.abc import Sequence

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    def add(self, token_ids: Sequence[int]) -> str:
        """Append tokens (usually one); return the new text that is final now ("" if none)."""
        raise NotImplementedError("write add")

    def finish(self) -> str:
        """The stream ended: return all text not yet returned (called once)."""
        raise NotImplementedError("write finish")
