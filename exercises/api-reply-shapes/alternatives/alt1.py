"""A correct solution written differently: a shared header helper, the error type by ranges, the stream built
from a list of (text, finish, usage) specs."""

from __future__ import annotations

import time
from typing import Any

from minisgl.server.protocol import Generation, usage


class ApiError:
    def body(self) -> dict[str, Any]:
        if self.status == 401:
            kind = "authentication_error"
        elif self.status == 503:
            kind = "service_unavailable"
        elif self.status >= 500:
            kind = "server_error"
        else:
            kind = "invalid_request_error"
        return {"error": dict(message=self.message, type=kind, param=self.param, code=self.error_code)}


def _head(uid, model, chat, obj):
    prefix = "chatcmpl" if chat else "cmpl"
    return {"id": prefix + "-" + str(uid), "object": obj, "created": int(time.time()), "model": model}


def completion(uid: int, model: str, chat: bool, text: str, finish: str, prompt_tokens: int,
               completion_tokens: int) -> dict[str, Any]:
    out = _head(uid, model, chat, "chat.completion" if chat else "text_completion")
    if chat:
        choice = {"index": 0, "message": {"role": "assistant", "content": text}}
    else:
        choice = {"index": 0, "text": text}
    choice.update(finish_reason=finish, logprobs=None)
    out["choices"] = [choice]
    out["usage"] = dict(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                        total_tokens=prompt_tokens + completion_tokens)
    return out


def chunk(uid: int, model: str, chat: bool, text: str | None, finish: str | None, first: bool = False,
          usage_: dict[str, int] | None = None) -> dict[str, Any]:
    out = _head(uid, model, chat, "chat.completion.chunk" if chat else "text_completion")
    if usage_ is not None:
        out.update(choices=[], usage=usage_)
        return out
    if not chat:
        choice = {"index": 0, "text": "" if text is None else text}
    else:
        delta = {}
        if first:
            delta["role"] = "assistant"
        if text is not None and len(text) > 0:
            delta["content"] = text
        choice = {"index": 0, "delta": delta}
    choice["finish_reason"] = finish
    choice["logprobs"] = None
    out["choices"] = [choice]
    return out


def stream_chunks(uid: int, model: str, gen: Generation, text: str, finish: str | None, prompt_tokens: int,
                  completion_tokens: int, first: bool) -> list[dict[str, Any]]:
    specs = []
    if first or text != "":
        specs.append((text, None, first, None))
    if finish:
        specs.append((None, finish, False, None))
        if gen.include_usage:
            specs.append((None, None, False, usage(prompt_tokens, completion_tokens)))
    return [chunk(uid, model, gen.chat, t, f, first=fi, usage_=u) for t, f, fi, u in specs]
