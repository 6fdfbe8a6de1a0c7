"""completion and chunk, "created is int(time.time())": the time is read once, at the first call, and cached: every later reply says that second."""

from __future__ import annotations

import time
from typing import Any

from minisgl.server.protocol import Generation, usage


class ApiError:
    def body(self) -> dict[str, Any]:
        kind = {401: "authentication_error", 404: "invalid_request_error", 413: "invalid_request_error",
                503: "service_unavailable"}.get(self.status, "invalid_request_error" if self.status < 500 else
                                                 "server_error")
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.error_code}}

def _created(cache={}):  # noqa: B006 - the cache is the mistake
    if "t" not in cache:
        cache["t"] = int(time.time())
    return cache["t"]


def completion(uid: int, model: str, chat: bool, text: str, finish: str, prompt_tokens: int,
               completion_tokens: int) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "logprobs": None}
    if chat:
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    return {"id": f"{'chatcmpl' if chat else 'cmpl'}-{uid}", "object": "chat.completion" if chat else "text_completion",
            "created": _created(), "model": model, "choices": [choice],
            "usage": usage(prompt_tokens, completion_tokens)}


def chunk(uid: int, model: str, chat: bool, text: str | None, finish: str | None, first: bool = False,
          usage_: dict[str, int] | None = None) -> dict[str, Any]:
    """One SSE chunk: new text, or the finish reason, or (usage_ given) the usage chunk with no choices."""
    out: dict[str, Any] = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{uid}",
                           "object": "chat.completion.chunk" if chat else "text_completion",
                           "created": _created(), "model": model}
    if usage_ is not None:
        out["choices"], out["usage"] = [], usage_
        return out
    if chat:
        delta: dict[str, Any] = {"role": "assistant"} if first else {}
        if text:
            delta["content"] = text
        out["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
    else:
        out["choices"] = [{"index": 0, "text": text or "", "finish_reason": finish, "logprobs": None}]
    return out


def stream_chunks(uid: int, model: str, gen: Generation, text: str, finish: str | None, prompt_tokens: int,
                  completion_tokens: int, first: bool) -> list[dict[str, Any]]:
    """The SSE chunks one reply of a stream becomes: its text (the first reply always gives one: the chat role goes
    there), then, when it finishes, the finish chunk and (include_usage) the usage chunk."""
    out = []
    if text or first:
        out.append(chunk(uid, model, gen.chat, text, None, first=first))
    if finish is not None:
        out.append(chunk(uid, model, gen.chat, None, finish))
        if gen.include_usage:
            out.append(chunk(uid, model, gen.chat, None, None, usage_=usage(prompt_tokens, completion_tokens)))
    return out
