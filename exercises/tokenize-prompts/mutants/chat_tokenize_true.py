"""The template tokenizes itself (tokenize left True): transformers returns a BatchEncoding, whose list is its keys, not ids."""

from dataclasses import replace

from minisgl.message import ErrorMsg, UserMsg


class TokenizeManager:
    def ids(self, msg):
        if msg.chat:
            return list(self.tokenizer.apply_chat_template(msg.prompt, add_generation_prompt=True))
        if isinstance(msg.prompt, str):
            return list(self.tokenizer.encode(msg.prompt)) if msg.prompt else []
        return list(msg.prompt)

    def tokenize(self, msg):
        field = "messages" if msg.chat else "prompt"
        try:
            ids = self.ids(msg)
        except Exception as e:
            return ErrorMsg(uid=msg.uid, message=f"the {field} cannot be tokenized: {e}", param=field)
        n, ctx = len(ids), self.max_seq_len
        if n == 0:
            return ErrorMsg(uid=msg.uid, message=f"the {field} is empty", param=field)
        if n >= ctx:
            return ErrorMsg(uid=msg.uid, message=f"the {field} has {n} tokens; the context is {ctx} tokens", param=field)
        max_tokens = ctx - n if msg.max_tokens is None else msg.max_tokens
        if n + max_tokens > ctx:
            return ErrorMsg(uid=msg.uid, message=f"{n} prompt tokens + max_tokens {max_tokens} = {n + max_tokens} "
                            f"exceeds the context of {ctx} tokens", param="max_tokens")
        return UserMsg(uid=msg.uid, input_ids=ids, sampling_params=replace(msg.sampling_params, max_tokens=max_tokens))
