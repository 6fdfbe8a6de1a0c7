"""A correct solution written differently: ids dispatches on the prompt's type first, tokenize computes the room
left and checks the refusals as a table of (condition, param, message)."""

from dataclasses import replace

from minisgl.message import ErrorMsg, UserMsg


class TokenizeManager:
    def ids(self, msg):
        prompt = msg.prompt
        if not msg.chat and isinstance(prompt, str):
            if prompt == "":
                return []
            return [int(i) for i in self.tokenizer.encode(prompt)]
        if not msg.chat:
            return [int(i) for i in prompt]
        text = self.tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        return [int(i) for i in self.tokenizer.encode(text, add_special_tokens=False)]

    def tokenize(self, msg):
        field = "prompt"
        if msg.chat:
            field = "messages"
        try:
            ids = self.ids(msg)
        except BaseException as exc:  # noqa: BLE001 - any failure of the tokenizer is the client's prompt
            if not isinstance(exc, Exception):
                raise
            return ErrorMsg(msg.uid, f"cannot tokenize {field}: {type(exc).__name__}: {exc}", 400, field)
        room = self.max_seq_len - len(ids)
        want = room if msg.max_tokens is None else msg.max_tokens
        refusals = [
            (not ids, field, f"{field}: no tokens"),
            (room <= 0, field, f"{field}: {len(ids)} tokens do not fit a context of {self.max_seq_len}"),
            (want > room, "max_tokens", f"max_tokens={want} with {len(ids)} prompt tokens needs more than the "
                                        f"{self.max_seq_len} tokens of the context"),
        ]
        for bad, param, message in refusals:
            if bad:
                return ErrorMsg(uid=msg.uid, message=message, status=400, param=param)
        params = replace(msg.sampling_params)
        params.max_tokens = want
        return UserMsg(msg.uid, ids, params)
