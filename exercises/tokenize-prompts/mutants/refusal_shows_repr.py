"""tokenize, "the message includes the exception's text (str(e))": the refusal shows repr(e), which escapes
quotes, backslashes and newlines, so a text that has them is not in the message as it is."""

from __future__ import annotations

from dataclasses import replace  # noqa: F401

from minisgl.message import ErrorMsg, TokenizeMsg, UserMsg  # noqa: F401


class TokenizeManager:
    def ids(self, msg: TokenizeMsg) -> list[int]:
        if msg.chat:
            text = self.tokenizer.apply_chat_template(msg.prompt, add_generation_prompt=True, tokenize=False)
            return list(self.tokenizer.encode(text, add_special_tokens=False))
        if isinstance(msg.prompt, str):
            return list(self.tokenizer.encode(msg.prompt)) if msg.prompt else []
        return list(msg.prompt)

    def tokenize(self, msg: TokenizeMsg) -> UserMsg | ErrorMsg:
        field = "messages" if msg.chat else "prompt"
        try:
            ids = self.ids(msg)
        except Exception as e:  # a chat template refuses what it cannot render (jinja raises its own types)
            return ErrorMsg(uid=msg.uid, message=f"the {field} cannot be tokenized: {e!r}", param=field)
        n, ctx = len(ids), self.max_seq_len
        if n == 0:
            return ErrorMsg(uid=msg.uid, message=f"the {field} is empty", param=field)
        if n >= ctx:
            return ErrorMsg(uid=msg.uid, message=f"the {field} has {n} tokens; the context is {ctx} tokens "
                            "(a prompt must leave room for at least one new token)", param=field)
        max_tokens = ctx - n if msg.max_tokens is None else msg.max_tokens
        if n + max_tokens > ctx:
            return ErrorMsg(uid=msg.uid, message=f"{n} prompt tokens + max_tokens {max_tokens} = {n + max_tokens} "
                            f"exceeds the context of {ctx} tokens", param="max_tokens")
        return UserMsg(uid=msg.uid, input_ids=ids, sampling_params=replace(msg.sampling_params, max_tokens=max_tokens))
