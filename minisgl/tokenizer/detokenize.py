"""Incremental detokenization: one request's generated token ids become text chunks that are safe to show now."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

REPLACEMENT = "\ufffd"  # what a decoder writes for bytes that are not (yet) a whole UTF-8 character


class IncrementalDetokenizer:
    """One request's stream of generated token ids -> text chunks safe to show now.

    Guarantees (tested with SmolLM2's byte-level BPE in tests/test_detokenize.py):

    1. Without stop strings, the concatenation of every `add()` result and `finish()` equals
       `tokenizer.decode(all_ids, skip_special_tokens=skip_special_tokens)` exactly, for any stream: random ids,
       special tokens, a multi-byte character split across tokens, a stream that ends in the middle of one.
    2. Text is never retracted or changed: at every moment `text` is a prefix of the final output, so no chunk
       holds a U+FFFD that the full decode does not have at that place.
    3. With stop strings, the output is the full decode cut just before the earliest occurrence of any stop
       string (at the same place, the shortest one); `stopped` becomes True and `stop_reason` names it, and
       `add()`/`finish()` then return "". Text that could be the start of a stop string is held back until it
       is known not to be, so a stop string split across tokens is still found and never partly shown.
    4. An `add()` decodes only a window (vLLM's and SGLang's prefix/read offsets): the tokens since the character
       boundary before the previous chunk, a few for real text; it grows only while the decode keeps ending in
       U+FFFD (invalid UTF-8). `finish()` decodes the whole stream once, which flushes a character the stream
       left unfinished.

    Works with any Hugging Face tokenizer; guarantees 1 and 2 need a decode that is a function of the
    concatenated bytes (byte-level BPE: GPT-2, Llama 3, Qwen, SmolLM2), not one that rewrites text across token
    boundaries (e.g. `clean_up_tokenization_spaces=True`).
    """

    def __init__(self, tokenizer: Any, stop: Sequence[str] = (), skip_special_tokens: bool = True) -> None:
        if isinstance(stop, str) or not all(stop):
            raise ValueError(f"stop must be a sequence of non-empty strings, got {stop!r}")
        self.tokenizer = tokenizer
        self.stop = tuple(stop)
        self.longest_stop = max(map(len, self.stop), default=0)
        self.skip_special_tokens = skip_special_tokens
        self.ids: list[int] = []
        self.prefix_offset = 0  # ids[prefix_offset:read_offset] decode to the tail of the text made final
        self.read_offset = 0  # ids[:read_offset] decode to final text; the decode ends on a character boundary there
        self.held = ""  # final text not returned yet, because a stop string may start in it
        self.text = ""
        self.stopped = False
        self.stop_reason: str | None = None

    def add(self, token_ids: Sequence[int]) -> str:
        """Append tokens (usually one); return the new text that is final now ("" if none)."""
        if self.stopped:
            return ""
        self.ids.extend(token_ids)
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

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=self.skip_special_tokens)

    def _release(self, chunk: str, final: bool) -> str:
        """Add final text to what is held; return the part of it that no stop string can start in."""
        held = self.held + chunk
        hits = sorted((at, len(s), s) for s in self.stop if (at := held.find(s)) >= 0)  # earliest, then shortest
        cut = hits[0][0] if hits else len(held)
        if not final:  # a stop string may still start before `cut`, in a tail that is a proper prefix of one
            tails = range(max(0, len(held) - self.longest_stop + 1), cut)
            cut = next((i for i in tails if any(s.startswith(held[i:]) for s in self.stop)), cut)
        if hits and cut == hits[0][0]:
            self.stopped, self.stop_reason = True, hits[0][2]
        out, self.held = held[:cut], "" if self.stopped else held[cut:]
        self.text += out
        return out
