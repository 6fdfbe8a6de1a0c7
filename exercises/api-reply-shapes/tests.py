"""Tests for api-reply-shapes: ApiError.body, completion, chunk and stream_chunks against the shapes of the statement
(built here, field by field), and whole streams built from random replies."""

import time

from judge.testing import rng
from minisgl.core import SamplingParams
from minisgl.server.protocol import ApiError, Generation, chunk, completion, stream_chunks

MODEL = "tiny-qwen3"


def gen(chat: bool, include_usage: bool) -> Generation:
    prompt = [{"role": "user", "content": "hi"}] if chat else "hi"
    return Generation(chat=chat, prompt=prompt, params=SamplingParams(), max_tokens=None, stream=True,
                      include_usage=include_usage)


def timed(fn, *args, **kw):
    """fn's result with "created" taken out (checked here: an int within the call's second)."""
    t0 = int(time.time())
    out = fn(*args, **kw)
    t1 = int(time.time())
    return strip(out, t0, t1)


def strip(obj, t0: int, t1: int):
    if isinstance(obj, list):
        return [strip(o, t0, t1) for o in obj]
    assert isinstance(obj, dict), f"a reply or chunk is a dict, not {type(obj).__name__}"
    assert "created" in obj, f"every reply and chunk has \"created\"; keys were {sorted(obj)}"
    created = obj["created"]
    kind = type(created).__name__
    assert kind == "int", f"\"created\" is int(time.time()), an int, not {kind}"
    now = t0 <= created <= t1
    assert now is True, "\"created\" is the time of the call, in seconds (int(time.time()))"
    return {k: v for k, v in obj.items() if k != "created"}


# the shapes of the statement, built here
def want_id(uid: int, chat: bool) -> str:
    return f"chatcmpl-{uid}" if chat else f"cmpl-{uid}"


def want_usage(p: int, c: int) -> dict:
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def want_chunk(uid: int, chat: bool, text, finish, first: bool = False, usage_=None) -> dict:
    out = {"id": want_id(uid, chat), "object": "chat.completion.chunk" if chat else "text_completion",
           "model": MODEL}
    if usage_ is not None:
        out["choices"], out["usage"] = [], usage_
    elif chat:
        delta = {}
        if first:
            delta["role"] = "assistant"
        if text:
            delta["content"] = text
        out["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
    else:
        out["choices"] = [{"index": 0, "text": text or "", "finish_reason": finish, "logprobs": None}]
    return out


def want_stream(uid: int, chat: bool, include_usage: bool, text, finish, p: int, c: int, first: bool) -> list:
    out = []
    if text or first:
        out.append(want_chunk(uid, chat, text, None, first))
    if finish is not None:
        out.append(want_chunk(uid, chat, None, finish))
        if include_usage:
            out.append(want_chunk(uid, chat, None, None, usage_=want_usage(p, c)))
    return out


def body_of(status: int, message: str, param=None, code=None):
    return ApiError(status, message, param=param, code=code).body()


def want_body(kind: str, message: str, param=None, code=None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


# ------------------------------------------------------------------------------------------- examples

def test_example_chat_stream():
    """A chat stream with usage: the first reply decodes to nothing yet (the role chunk still goes), two replies of
    text, the last one finished: role chunk, text, text, finish chunk, usage chunk."""
    g = gen(chat=True, include_usage=True)
    got = []
    for text, finish, first in (("", None, True), ("Hi", None, False), (" there", "length", False)):
        got += timed(stream_chunks, 7, MODEL, g, text, finish, 5, 3, first)
    want = [
        {"id": "chatcmpl-7", "object": "chat.completion.chunk", "model": MODEL,
         "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None, "logprobs": None}]},
        {"id": "chatcmpl-7", "object": "chat.completion.chunk", "model": MODEL,
         "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None, "logprobs": None}]},
        {"id": "chatcmpl-7", "object": "chat.completion.chunk", "model": MODEL,
         "choices": [{"index": 0, "delta": {"content": " there"}, "finish_reason": None, "logprobs": None}]},
        {"id": "chatcmpl-7", "object": "chat.completion.chunk", "model": MODEL,
         "choices": [{"index": 0, "delta": {}, "finish_reason": "length", "logprobs": None}]},
        {"id": "chatcmpl-7", "object": "chat.completion.chunk", "model": MODEL, "choices": [],
         "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}},
    ]
    assert got == want, "the five chunks of the stream (without \"created\")"


def test_example_error_and_reply():
    """A 404 naming the model, and a text completion's whole reply."""
    got = body_of(404, "The model `gpt-4` does not exist", param="model", code="model_not_found")
    assert got == want_body("invalid_request_error", "The model `gpt-4` does not exist", "model",
                            "model_not_found"), "the body of a 404"
    got = timed(completion, 3, MODEL, False, "Paris.", "stop", 4, 2)
    want = {"id": "cmpl-3", "object": "text_completion", "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None, "text": "Paris."}],
            "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}}
    assert got == want, "the whole reply of a text completion (without \"created\")"


# ------------------------------------------------------------------------------------------- ApiError.body

def test_error_types_by_status():
    """401 authentication_error, 503 service_unavailable, other < 500 invalid_request_error, other >= 500
    server_error."""
    g = rng()
    cases = [(401, "authentication_error"), (503, "service_unavailable"), (400, "invalid_request_error"),
             (404, "invalid_request_error"), (413, "invalid_request_error"), (499, "invalid_request_error"),
             (500, "server_error"), (502, "server_error"), (504, "server_error")]
    cases += [(s, "invalid_request_error") for s in (402, 403, 405, 409, 422, 429)]  # 403 and 429 too: no types
    cases += [(s, "server_error") for s in (501, 505, 507, 599)]                      # of their own
    g.shuffle(cases)
    for status, kind in cases:
        msg = f"m{g.randint(100, 999)}"
        got = body_of(status, msg, param="p")
        assert got == want_body(kind, msg, "p"), f"the body of a {status}"


def test_error_body_keeps_none_fields():
    """param and code are always there, None when not given."""
    g = rng()
    msg = f"overloaded {g.randint(1, 99)}"
    got = body_of(503, msg)
    assert got == want_body("service_unavailable", msg), "a 503 without param or code: both keys, as None"
    got = body_of(400, msg, param="top_p")
    assert got == want_body("invalid_request_error", msg, "top_p"), "a 400 with param, without code"
    got = body_of(500, msg, code="internal")
    assert got == want_body("server_error", msg, None, "internal"), "a 500 with code, without param"


# ------------------------------------------------------------------------------------------- completion

def test_completion_shapes():
    """The whole reply, chat and text completion, with random uids, texts (an empty one too) and counts."""
    g = rng()
    for chat, empty in ((True, False), (False, False), (g.random() < 0.5, False), (True, True), (False, True)):
        uid, p, c = g.randint(1, 10**6), g.randint(1, 900), g.randint(1, 300)
        text = "" if empty else g.choice(["", "x", "Hello, world!", "a\nb é"]) + str(g.randint(0, 99))
        finish = g.choice(["stop", "length"])
        got = timed(completion, uid, MODEL, chat, text, finish, p, c)
        choice = {"index": 0, "finish_reason": finish, "logprobs": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        want = {"id": want_id(uid, chat), "object": "chat.completion" if chat else "text_completion",
                "model": MODEL, "choices": [choice], "usage": want_usage(p, c)}
        assert got == want, f"completion(chat={chat}): the whole reply (without \"created\")"


# ------------------------------------------------------------------------------------------- chunk

def test_chat_chunk_deltas():
    """The role only in a first chunk's delta; content only for non-empty text; an empty delta is {}."""
    g = rng()
    uid = g.randint(1, 10**6)
    for text in ("Hi", "", None, f"t{g.randint(0, 999)}"):
        for first in (True, False):
            for finish in (None, g.choice(["stop", "length"])):
                got = timed(chunk, uid, MODEL, True, text, finish, first)
                want = want_chunk(uid, True, text, finish, first)
                assert got == want, f"chat chunk(text={text!r}, finish={finish!r}, first={first}) (without created)"


def test_completion_chunk_text():
    """A text completion's chunk: the text ("" for None), no delta, whatever first says."""
    g = rng()
    uid = g.randint(1, 10**6)
    for text in ("Hi", "", None, f"t{g.randint(0, 999)}"):
        for first in (True, False):
            finish = g.choice([None, "stop", "length"])
            got = timed(chunk, uid, MODEL, False, text, finish, first)
            want = want_chunk(uid, False, text, finish, first)
            assert got == want, f"text chunk(text={text!r}, finish={finish!r}, first={first}) (without created)"


def test_usage_chunk():
    """usage_ given: no choices, the usage as given, for chat and text completions."""
    g = rng()
    for chat in (True, False):
        uid, p, c = g.randint(1, 10**6), g.randint(1, 900), g.randint(1, 300)
        u = want_usage(p, c)
        got = timed(chunk, uid, MODEL, chat, None, None, usage_=u)
        assert got == want_chunk(uid, chat, None, None, usage_=u), f"the usage chunk (chat={chat})"


def test_created_is_read_at_each_call():
    """created is int(time.time()) at the call: time.time is made to say another second (one drawn far from now),
    and every reply and chunk must say it, not a time read once before."""
    g = rng()
    fake = g.randint(10**9, 1_600_000_000)
    real = time.time
    time.time = lambda: fake + 0.75
    try:
        got = [completion(5, MODEL, True, "hi", "stop", 2, 1)["created"],
               completion(5, MODEL, False, "hi", "stop", 2, 1)["created"],
               chunk(5, MODEL, True, "hi", None, True)["created"],
               chunk(5, MODEL, False, None, "stop")["created"],
               chunk(5, MODEL, True, None, None, usage_={"prompt_tokens": 2, "completion_tokens": 1,
                                                       "total_tokens": 3})["created"]]
    finally:
        time.time = real
    assert got == [fake] * 5, f"\"created\" is int(time.time()) read at each call (time.time() said {fake}.75)"


# ------------------------------------------------------------------------------------------- stream_chunks

def test_stream_chunks_one_reply():
    """Each case of one reply: first or not, text or not, finished or not, usage asked for or not."""
    g = rng()
    for chat in (True, False):
        for include_usage in (True, False):
            for first in (True, False):
                for text in ("", f"w{g.randint(0, 99)}"):
                    for finish in (None, g.choice(["stop", "length"])):
                        uid, p, c = g.randint(1, 10**6), g.randint(1, 900), g.randint(1, 300)
                        got = timed(stream_chunks, uid, MODEL, gen(chat, include_usage), text, finish, p, c, first)
                        want = want_stream(uid, chat, include_usage, text, finish, p, c, first)
                        assert got == want, (f"stream_chunks(chat={chat}, include_usage={include_usage}, "
                                             f"first={first}, text={text!r}, finish={finish!r}) (without created)")


def test_whole_streams():
    """Random streams of replies (some with no text): one role chunk, the first; contents add up to the text;
    one finish chunk; the usage chunk last when asked for."""
    g = rng()
    for _ in range(8):
        chat, include_usage = g.random() < 0.6, g.random() < 0.5
        uid, p = g.randint(1, 10**6), g.randint(1, 300)
        texts = [g.choice(["", "", "a", "bc", " d", "\n", "é"]) for _ in range(g.randint(1, 7))]
        finish = g.choice(["stop", "length"])
        got = []
        for i, text in enumerate(texts):
            f = finish if i == len(texts) - 1 else None
            got += timed(stream_chunks, uid, MODEL, gen(chat, include_usage), text, f, p, i + 1, i == 0)
        want = []
        for i, text in enumerate(texts):
            f = finish if i == len(texts) - 1 else None
            want += want_stream(uid, chat, include_usage, text, f, p, i + 1, i == 0)
        assert got == want, f"the stream of {texts} (chat={chat}, include_usage={include_usage}, finish={finish})"
        roles = [i for i, ch in enumerate(got) if ch["choices"] and "role" in ch["choices"][0].get("delta", {})]
        assert roles == ([0] if chat else []), "chat: exactly one chunk carries the role, the first"
        key = "delta" if chat else "text"
        joined = "".join((ch["choices"][0][key].get("content", "") if chat else ch["choices"][0][key])
                         for ch in got if ch["choices"])
        assert joined == "".join(texts), "the chunks' text adds up to the replies' text"
        finishes = [ch["choices"][0]["finish_reason"] for ch in got if ch["choices"]]
        assert finishes.count(finish) == 1 and finishes[-1] == finish, "one finish chunk, after every text chunk"
        assert ("usage" in got[-1]) == include_usage, "the usage chunk comes last, only when asked for"
