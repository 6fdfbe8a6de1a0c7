"""Exercise tokenize-prompts: TokenizeManager.ids and TokenizeManager.tokenize.

Your code runs as if written in minisgl/tokenizer/tokenize.py: `replace` (from dataclasses), `ErrorMsg`,
`TokenizeMsg` and `UserMsg` (from minisgl.message) are there. The class is the engine's: `__init__` has set
self.tokenizer (a Hugging Face tokenizer) and self.max_seq_len (the context, in tokens).
"""

from __future__ import annotations

from dataclasses import replace  # noqa: F401

from minisgl.message import ErrorMsg, TokenizeMsg, UserMsg  # noqa: F401


class TokenizeManager:
    def ids(self, msg: TokenizeMsg) -> list[int]:
        """The prompt's token ids: chat messages through the chat template (then encoded without special
        tokens), a completion string with encode() ("" gives []), a token-id list as a list of its own."""
        raise NotImplementedError("write ids")

    def tokenize(self, msg: TokenizeMsg) -> UserMsg | ErrorMsg:
        """The scheduler's UserMsg (its sampling_params a copy whose max_tokens is the tokens to generate), or an
        ErrorMsg whose param names the request field at fault ("prompt", "messages" or "max_tokens")."""
        raise NotImplementedError("write tokenize")
