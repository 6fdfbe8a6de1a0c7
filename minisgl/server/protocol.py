"""OpenAI's API as the `openai` client uses it: each request checked field by field into a Generation, and the
shapes of replies, chunks and errors. What we do not support is refused with a 400 that names the field."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from minisgl.core import SamplingParams


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        # error_code, not code: `code` is a module's name, an attribute trusted judging refuses (judge/screen.py)
        self.status, self.message, self.param, self.error_code = status, message, param, code

    def body(self) -> dict[str, Any]:
        kind = {401: "authentication_error", 404: "invalid_request_error", 413: "invalid_request_error",
                503: "service_unavailable"}.get(self.status, "invalid_request_error" if self.status < 500 else
                                                 "server_error")
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.error_code}}


@dataclass
class Generation:
    chat: bool
    prompt: str | list[int] | list[dict[str, str]]
    params: SamplingParams
    max_tokens: int | None  # None: up to the end of the context
    stop: list[str] = field(default_factory=list)
    stream: bool = False
    include_usage: bool = False


_COMMON = {"model", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "stream", "stream_options",
           "ignore_eos", "n", "user", "logprobs", "logit_bias", "presence_penalty", "frequency_penalty", "metadata",
           "store", "service_tier"}
_COMPLETION = _COMMON | {"prompt", "echo", "best_of", "suffix"}
_CHAT = _COMMON | {"messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice", "functions",
                   "function_call", "parallel_tool_calls", "response_format", "modalities", "audio", "prediction",
                   "reasoning_effort", "web_search_options"}
# supported only at the value that means "off"
_OFF: dict[str, tuple[Any, ...]] = {
    "logprobs": (None, False), "logit_bias": (None, {}), "presence_penalty": (None, 0, 0.0),
    "frequency_penalty": (None, 0, 0.0), "echo": (None, False), "best_of": (None, 1), "suffix": (None, ""),
    "top_logprobs": (None, 0), "tools": (None, []), "tool_choice": (None, "none"), "functions": (None, []),
    "function_call": (None, "none"), "parallel_tool_calls": (None,), "modalities": (None, ["text"]),
    "audio": (None,), "prediction": (None,), "reasoning_effort": (None,), "web_search_options": (None,),
    "store": (None, False), "service_tier": (None, "auto", "default"),
}


def _bad(param: str, message: str) -> ApiError:
    return ApiError(400, f"{param}: {message}", param=param)


_INT_MAX = 2**31 - 1  # what a token count, top_k or n can be (and what msgpack and torch take)


def _int(body: dict, name: str, lo: int = -_INT_MAX, hi: int = _INT_MAX) -> int | None:
    v = body.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(name, f"expected an integer, got {type(v).__name__} {v!r}"[:200])
    if not lo <= v <= hi:
        raise _bad(name, f"{v} is out of range [{lo}, {hi}]"[:200])
    return v


def _num(body: dict, name: str, lo: float, hi: float, lo_open: bool = False) -> float | None:
    v = body.get(name)
    if v is None:
        return None
    # an int is finite however large (math.isfinite would overflow converting it); its message is cut short
    if isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(v, float) and not math.isfinite(v):
        raise _bad(name, f"expected a number, got {v!r}"[:200])
    if v > hi or v < lo or (lo_open and v == lo):
        raise _bad(name, f"{v} is out of range {'(' if lo_open else '['}{lo}, {hi}]"[-200:])
    return float(v)


def _bool(body: dict, name: str) -> bool:
    v = body.get(name)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise _bad(name, f"expected true or false, got {v!r}"[:200])
    return v


def _stop(body: dict) -> list[str]:
    v = body.get("stop")
    if v is None:
        return []
    stops = [v] if isinstance(v, str) else v
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise _bad("stop", "expected a string or a list of strings")
    if len(stops) > 4:
        raise _bad("stop", f"at most 4 stop strings, got {len(stops)}")
    if any(not s for s in stops):
        raise _bad("stop", "a stop string is empty")
    return stops


def _content(i: int, content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise _bad(f"messages[{i}].content", "only text parts ({'type': 'text', 'text': ...}) are supported")
            parts.append(part["text"])
        return "".join(parts)
    raise _bad(f"messages[{i}].content", f"expected a string or a list of text parts, got {type(content).__name__}")


def _messages(body: dict) -> list[dict[str, str]]:
    msgs = body.get("messages")
    if msgs is None:
        raise _bad("messages", "is required")
    if not isinstance(msgs, list) or not msgs:
        raise _bad("messages", "expected a non-empty list of messages")
    out = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise _bad(f"messages[{i}]", f"expected an object, got {type(m).__name__}")
        role = m.get("role")
        if role not in ("system", "user", "assistant", "developer"):
            raise _bad(f"messages[{i}].role", f"{role!r} is not supported (system, user, assistant, developer)"[:200])
        for k in m:
            if k not in ("role", "content", "name"):
                raise _bad(f"messages[{i}].{k}", "is not supported")
        out.append({"role": "system" if role == "developer" else role, "content": _content(i, m.get("content"))})
    return out


def _prompt(body: dict) -> str | list[int]:
    p = body.get("prompt")
    if p is None:
        raise _bad("prompt", "is required")
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], (str, list)):
        p = p[0]  # a batch of one
    if isinstance(p, str):
        return p
    if isinstance(p, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in p):
        if any(not 0 <= t <= _INT_MAX for t in p):
            raise _bad("prompt", "a token id is negative or too large")
        return p
    if isinstance(p, list) and all(isinstance(t, (str, list)) for t in p):
        raise _bad("prompt", f"a batch of {len(p)} prompts is not supported: send one prompt per request")
    raise _bad("prompt", "expected a string or a list of token ids")


def parse(body: Any, chat: bool, model_names: tuple[str, ...]) -> Generation:
    """The request `body` (decoded JSON) as a Generation, or ApiError."""
    if not isinstance(body, dict):
        raise ApiError(400, f"the request body must be a JSON object, got {type(body).__name__}")
    allowed = _CHAT if chat else _COMPLETION
    for k in body:
        if k not in allowed:
            raise ApiError(400, f"Unrecognized request argument supplied: {k}"[:200], param=str(k)[:100])
    for k, off in _OFF.items():
        if k in body and body[k] not in off:
            raise _bad(k, "is not supported by this server")
    model = body.get("model")
    if not isinstance(model, str):
        raise _bad("model", "is required (a string: see GET /v1/models)")
    if model not in model_names:
        raise ApiError(404, f"The model `{model[:100]}` does not exist (this server serves {model_names[0]})",
                       param="model", code="model_not_found")
    if _int(body, "n", 1) not in (None, 1):
        raise _bad("n", "n > 1 is not supported: send one request per completion")
    rf = body.get("response_format")
    if rf is not None and rf != {"type": "text"}:
        raise _bad("response_format", "only {'type': 'text'} is supported")
    max_tokens = _int(body, "max_tokens", 1)
    if chat and body.get("max_completion_tokens") is not None:
        max_tokens = _int(body, "max_completion_tokens", 1)
    if max_tokens is None and not chat:
        max_tokens = 16  # OpenAI's default for completions
    temperature = _num(body, "temperature", 0.0, 2.0)
    top_p = _num(body, "top_p", 0.0, 1.0, lo_open=True)
    top_k = _int(body, "top_k", -1)
    if top_k == 0:
        raise _bad("top_k", "must be -1 (off) or >= 1")
    seed = _int(body, "seed", 0, 2**63 - 1)
    stream = _bool(body, "stream")
    so = body.get("stream_options")
    include_usage = False
    if so is not None:
        if not stream:
            raise _bad("stream_options", "is only allowed when stream is true")
        if not isinstance(so, dict) or any(k != "include_usage" for k in so):
            raise _bad("stream_options", "only {'include_usage': true/false} is supported")
        include_usage = _bool(so, "include_usage")
    params = SamplingParams(temperature=1.0 if temperature is None else temperature, top_k=top_k or -1,
                            top_p=1.0 if top_p is None else top_p, ignore_eos=_bool(body, "ignore_eos"),
                            max_tokens=1, seed=seed)  # max_tokens is settled by the tokenizer, with the prompt's length
    prompt: str | list[int] | list[dict[str, str]] = _messages(body) if chat else _prompt(body)
    return Generation(chat=chat, prompt=prompt, params=params, max_tokens=max_tokens, stop=_stop(body),
                      stream=stream, include_usage=include_usage)


# -- replies
def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def completion(uid: int, model: str, chat: bool, text: str, finish: str, prompt_tokens: int,
               completion_tokens: int) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "logprobs": None}
    if chat:
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    return {"id": f"{'chatcmpl' if chat else 'cmpl'}-{uid}", "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()), "model": model, "choices": [choice],
            "usage": usage(prompt_tokens, completion_tokens)}


def chunk(uid: int, model: str, chat: bool, text: str | None, finish: str | None, first: bool = False,
          usage_: dict[str, int] | None = None) -> dict[str, Any]:
    """One SSE chunk: new text, or the finish reason, or (usage_ given) the usage chunk with no choices."""
    out: dict[str, Any] = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{uid}",
                           "object": "chat.completion.chunk" if chat else "text_completion",
                           "created": int(time.time()), "model": model}
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
