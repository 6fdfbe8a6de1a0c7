"""Tests for message-decode: _check's rules one by one, _build's refusals, then decode on frames of every message
type, good and corrupted."""

import dataclasses
from typing import Any, Literal, Optional

import msgpack

from judge.testing import expected, rng
from minisgl.core import SamplingParams
from minisgl.message import MESSAGES, MessageError, decode, encode
from minisgl.message.codec import _build, _check
from minisgl.message.messages import (
    AbortMsg,
    ErrorMsg,
    ReplyMsg,
    StatsMsg,
    StatsReplyMsg,
    StreamMsg,
    TokenizeMsg,
    TokensMsg,
    UserMsg,
)


def refusal(fn, *args) -> str | None:
    """The message of the MessageError that fn(*args) raised, or None if it returned."""
    try:
        fn(*args)
    except MessageError as e:
        return str(e)
    return None


def check_refused(value, hint, where: str) -> None:
    message = refusal(_check, value, hint, where)
    assert message is not None, f"_check({value!r}, {hint}, {where!r}) must raise MessageError"
    assert where in message, f"the message must contain the path {where!r}; it was: {message!r}"


def checked(value, hint, where: str = "Msg.field"):
    """_check's result as plain data: (type name, value)."""
    message = refusal(_check, value, hint, where)
    assert message is None, f"_check({value!r}, {hint}) must accept it, but raised MessageError: {message}"
    got = _check(value, hint, where)
    return type(got).__name__, got


def built_refusal(cls, body, where: str) -> str:
    message = refusal(_build, cls, body, where)
    assert message is not None, f"_build({cls.__name__}, {body!r}) must raise MessageError"
    return message


def plain(obj) -> Any:
    """A message or SamplingParams as plain data, with the Python type of every field."""
    if dataclasses.is_dataclass(obj):
        return (type(obj).__name__, {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    return (type(obj).__name__, obj)


def test_example_user_msg():
    """A good UserMsg body is built, its SamplingParams too; a bool uid and an unknown field are refused."""
    body = {"uid": 7, "input_ids": [5, 0, 11], "sampling_params": {"temperature": 1, "max_tokens": 3}}
    msg = _build(UserMsg, body, "UserMsg")
    assert plain(msg) == plain(UserMsg(uid=7, input_ids=[5, 0, 11],
                                       sampling_params=SamplingParams(temperature=1.0, max_tokens=3))), \
        "the UserMsg built from the body (temperature 1 becomes the float 1.0)"
    message = built_refusal(UserMsg, {**body, "uid": True}, "UserMsg")
    assert "UserMsg.uid" in message, f"a bool is not an int: the message names UserMsg.uid; it was {message!r}"
    message = built_refusal(UserMsg, {**body, "priority": 2}, "UserMsg")
    assert "priority" in message, f"an unknown field is refused by name; the message was {message!r}"


def test_example_check_a_list():
    """list[int]: every item is checked, and a bad one is named by its index."""
    assert checked([3, 1, 4], list[int]) == ("list", [3, 1, 4]), "a list of ints is accepted as it is"
    check_refused([3, "1", 4], list[int], "TokensMsg.tokens[1]")


def test_ints_are_not_bools():
    """int accepts ints, negative and big ones; bools, floats (whole ones too) and strings are refused."""
    g = rng()
    n = g.randint(2, 10**12)
    assert checked(n, int) == ("int", n), "an int is accepted"
    assert checked(-n, int) == ("int", -n), "a negative int is accepted"
    assert checked(0, int) == ("int", 0), "0 is an int"
    for bad in (True, False, float(n), str(n), None, [n]):
        check_refused(bad, int, f"AbortMsg.uid#{g.randint(1, 99)}")


def test_str_and_bool():
    """str accepts strings only; bool accepts True and False only (not 0 or 1)."""
    g = rng()
    s = "".join(g.choice("ab é😀") for _ in range(g.randint(1, 8)))
    assert checked(s, str) == ("str", s), "a string is accepted"
    assert checked("", str) == ("str", ""), "the empty string is a string"
    check_refused(g.randint(1, 9), str, "ReplyMsg.text")
    check_refused(b"bytes", str, "ReplyMsg.text")
    check_refused(None, str, "ErrorMsg.message")
    assert checked(True, bool) == ("bool", True), "True is a bool"
    assert checked(False, bool) == ("bool", False), "False is a bool"
    check_refused(1, bool, "TokenizeMsg.chat")
    check_refused(0, bool, "TokenizeMsg.chat")
    check_refused("true", bool, "TokenizeMsg.chat")


def test_float_accepts_ints_as_floats():
    """float accepts floats, and ints as floats; bools and strings are refused."""
    g = rng()
    x = round(g.uniform(0.1, 5.0), 3)
    assert checked(x, float) == ("float", x), "a float is accepted as it is"
    n = g.randint(2, 40)
    assert checked(n, float) == ("float", float(n)), "an int where a float is expected is returned as a float"
    assert checked(0, float) == ("float", 0.0), "0 becomes 0.0"
    check_refused(True, float, "SamplingParams.top_p")
    check_refused(False, float, "SamplingParams.top_p")
    check_refused(str(x), float, "SamplingParams.temperature")
    check_refused(None, float, "SamplingParams.temperature")


def test_lists():
    """list[X]: a list whose every item is an X; the path of a bad item is where[i]; the result is a new list."""
    g = rng()
    items = [g.randint(0, 50000) for _ in range(g.randint(3, 9))]
    assert checked(list(items), list[int]) == ("list", items), "a list of ints"
    assert checked([], list[int]) == ("list", []), "an empty list is a list of ints"
    empty = []
    assert _check(empty, list[int], "x") is not empty, "the result is a new list, an empty one too"
    original = [1, 2]
    result = _check(original, list[float], "x")
    assert result == [1.0, 2.0], "items are the checked items (ints become floats in a list[float])"
    assert [type(v).__name__ for v in result] == ["float", "float"], "the items are converted to floats"
    assert original == [1, 2] and [type(v).__name__ for v in original] == ["int", "int"], \
        "the list given is not changed: the result is a new list"
    for i in (0, len(items) - 1, g.randrange(len(items))):
        bad = list(items)
        bad[i] = g.choice([True, "7", 2.5, None, [1]])
        check_refused(bad, list[int], f"UserMsg.input_ids[{i}]")
    check_refused(tuple(items), list[int], "UserMsg.input_ids")
    check_refused({"0": 1}, list[int], "UserMsg.input_ids")
    check_refused("abc", list[str], "StreamMsg.stop")
    check_refused(g.randint(1, 9), list[int], "UserMsg.input_ids")
    assert checked([None, "stop", None], list[str | None]) == ("list", [None, "stop", None]), \
        "list[str | None]: each item a str or None"
    check_refused([None, 3], list[str | None], "TokensMsg.finish[1]")


def test_dicts():
    """dict[K, V]: a map whose keys are K and values V; the result is a new dict."""
    g = rng()
    d = {f"k{i}": g.randint(0, 900) for i in range(g.randint(1, 5))}
    assert checked(dict(d), dict[str, int]) == ("dict", d), "a map of str to int"
    assert checked({}, dict[str, int]) == ("dict", {}), "an empty map"
    check_refused([("a", 1)], dict[str, int], "StatsReplyMsg.stats")
    check_refused(g.randint(1, 9), dict[str, int], "StatsReplyMsg.stats")
    check_refused({**d, "bad": "1"}, dict[str, int], "StatsReplyMsg.stats")
    check_refused({**d, "bad": True}, dict[str, int], "StatsReplyMsg.stats")
    check_refused({**d, 5: 1}, dict[str, int], "StatsReplyMsg.stats")
    original = {"a": 1}
    result = _check(original, dict[str, float], "x")
    assert (result, type(result["a"]).__name__) == ({"a": 1.0}, "float"), "values are the checked values"
    assert (result is not original, type(original["a"]).__name__) == (True, "int"), \
        "the map given is not changed: the result is a new dict"
    for given in ({}, dict(d)):  # nothing to convert: still a new dict (a change to it is not a change to the frame)
        assert _check(given, dict[str, int], "x") is not given, f"the result is a new dict, {given or 'an empty one'} too"
    message = refusal(_check, {"a": 1, "b": "x"}, dict[str, int], "S.stats")
    assert message is not None and "S.stats" in message, f"a bad value names the map's path; got {message!r}"


def test_none_and_unions():
    """X | None accepts X and None; a union tries each member in turn; nothing else is accepted."""
    g = rng()
    n = g.randint(1, 10**6)
    assert checked(None, int | None) == ("NoneType", None), "None is accepted by int | None"
    assert checked(n, int | None) == ("int", n), "an int is accepted by int | None"
    assert checked(None, Optional[str]) == ("NoneType", None), "Optional[str] is a union too"  # noqa: UP045
    assert checked("x", Optional[str]) == ("str", "x"), "Optional[str] accepts a str"  # noqa: UP045
    check_refused("7", int | None, "TokenizeMsg.max_tokens")
    check_refused(True, int | None, "TokenizeMsg.max_tokens")
    check_refused(0.5, int | None, "SamplingParams.seed")
    assert checked(None, type(None)) == ("NoneType", None), "None where None is expected"
    check_refused(0, type(None), "X.nothing")
    check_refused("", type(None), "X.nothing")
    prompt = str | list[int] | list[dict[str, str]]
    assert checked("hi", prompt) == ("str", "hi"), "a prompt as text"
    assert checked([n, 2], prompt) == ("list", [n, 2]), "a prompt as token ids"
    chat = [{"role": "user", "content": "hi"}]
    assert checked(chat, prompt) == ("list", chat), "a prompt as chat messages (the third member)"
    check_refused([{"role": 1}], prompt, "TokenizeMsg.prompt")
    check_refused(n, prompt, "TokenizeMsg.prompt")
    check_refused(["a", 1], prompt, "TokenizeMsg.prompt")
    assert checked(n, float | str) == ("float", float(n)), "the first member that accepts gives the result"
    assert (checked(n, int | float), checked(n, float | int)) == (("int", n), ("float", float(n))), \
        "members that both accept the value: the first one, in the union's order, gives the result"


def test_literal_and_any():
    """Literal[...] accepts its values only; Any accepts everything as it is."""
    g = rng()
    hint = Literal["stop", "length", "abort"]
    for v in ("stop", "length", "abort"):
        assert checked(v, hint) == ("str", v), f"{v!r} is one of the literal's values"
    check_refused("eos", hint, "ReplyMsg.finish_reason")
    check_refused(None, hint, "ReplyMsg.finish_reason")
    n = g.randint(3, 99)
    assert checked(n, Literal[1, 2, n]) == ("int", n), "an int literal"
    check_refused(n + 1, Literal[1, 2, n], "X.kind")
    for v in (None, n, "s", [1, "a"], {"k": True}, True):
        assert checked(v, Any) == (type(v).__name__, v), f"Any accepts {v!r} as it is"


def test_nested_sampling_params():
    """A SamplingParams is a map of its fields, built and validated; its path is the field's."""
    g = rng()
    k = g.randint(2, 60)
    assert plain(_check({"top_k": k, "temperature": 2}, SamplingParams, "UserMsg.sampling_params")) == \
        plain(SamplingParams(top_k=k, temperature=2.0)), "a SamplingParams from a map (2 becomes 2.0)"
    assert plain(_check({}, SamplingParams, "x")) == plain(SamplingParams()), "an empty map: the defaults"
    check_refused([k], SamplingParams, "UserMsg.sampling_params")
    check_refused(None, SamplingParams, "UserMsg.sampling_params")
    where = "TokenizeMsg.sampling_params"
    message = refusal(_check, {"top_k": "5"}, SamplingParams, where)
    assert message is not None and f"{where}.top_k" in message, \
        f"a bad type inside names the nested path {where}.top_k; got {message!r}"
    message = refusal(_check, {"top_k": 0}, SamplingParams, where)
    assert message is not None, "top_k=0 is refused by SamplingParams.validate: a MessageError"
    assert where in message and "top_k" in message, \
        f"the message has the path and validate's message (naming top_k); got {message!r}"
    bad = g.choice([{"max_tokens": -k}, {"top_p": 0}, {"temperature": -1.5}, {"max_tokens": 0}])
    message = built_refusal(SamplingParams, bad, "UserMsg.sampling_params")
    name = next(iter(bad))
    assert "UserMsg.sampling_params" in message and name in message, \
        f"validate refuses {bad}: the message has the path and names {name!r}; got {message!r}"
    message = built_refusal(SamplingParams, {"max_tokens": True}, "U.sp")
    assert "U.sp.max_tokens" in message, f"a bool max_tokens is refused by type first; got {message!r}"


def test_build_refuses_a_body_that_is_not_a_map():
    """The body must be a dict of fields."""
    g = rng()
    for body in ([g.randint(1, 9)], "uid", g.randint(1, 9), None, True):
        message = built_refusal(AbortMsg, body, "AbortMsg")
        assert "AbortMsg" in message, f"the message contains the path; got {message!r}"


def test_build_refuses_unknown_fields_by_name():
    """Every unknown field is named; a key that is not a str is refused too, with a MessageError."""
    g = rng()
    uid = g.randint(1, 10**6)
    message = built_refusal(AbortMsg, {"uid": uid, "xtra": 1}, "AbortMsg")
    assert "xtra" in message, f"the unknown field is named; got {message!r}"
    message = built_refusal(AbortMsg, {"uid": uid, "zeta": 1, "alpha": 2}, "AbortMsg")
    assert "zeta" in message and "alpha" in message, f"each unknown field is named; got {message!r}"
    message = built_refusal(AbortMsg, {"uid": uid, 5: 1, "b": 2}, "AbortMsg")
    assert "5" in message and "b" in message, f"an int key is an unknown field too; got {message!r}"
    message = built_refusal(StatsMsg, {"uid": uid, None: 0}, "StatsMsg")
    assert "None" in message, f"a nil key is an unknown field; got {message!r}"
    message = built_refusal(SamplingParams, {"temprature": 0.5}, "UserMsg.sampling_params")
    assert "temprature" in message, f"a misspelt SamplingParams field is refused by name; got {message!r}"


def test_build_refuses_missing_required_fields_by_name():
    """A field without a default must be there; one with a default (or a default factory) may be left out."""
    g = rng()
    uid = g.randint(1, 10**6)
    message = built_refusal(AbortMsg, {}, "AbortMsg")
    assert "uid" in message, f"the missing field is named; got {message!r}"
    message = built_refusal(TokensMsg, {"uids": [uid], "finish": [None]}, "TokensMsg")
    assert "tokens" in message, f"the missing field is named; got {message!r}"
    message = built_refusal(UserMsg, {"input_ids": [1]}, "UserMsg")
    assert "uid" in message and "sampling_params" in message, f"each missing field is named; got {message!r}"
    assert plain(_build(StreamMsg, {"uid": uid, "prompt_tokens": 4}, "StreamMsg")) == \
        plain(StreamMsg(uid=uid, prompt_tokens=4, stop=[])), "stop has a default factory: it may be left out"
    assert plain(_build(ErrorMsg, {"uid": uid, "message": "m"}, "ErrorMsg")) == \
        plain(ErrorMsg(uid=uid, message="m", status=400, param=None)), "defaults fill what is left out"
    assert plain(_build(SamplingParams, {"seed": uid}, "P")) == plain(SamplingParams(seed=uid)), \
        "SamplingParams fields all have defaults"


def test_build_checks_every_field_with_its_path():
    """A field's value is checked against the field's type; the path is where.field (where[i] inside)."""
    g = rng()
    uid = g.randint(1, 10**6)
    cases = [
        (AbortMsg, {"uid": str(uid)}, "AbortMsg.uid"),
        (AbortMsg, {"uid": float(uid)}, "AbortMsg.uid"),
        (StreamMsg, {"uid": uid, "prompt_tokens": 3, "stop": ["a", 1]}, "StreamMsg.stop[1]"),
        (TokensMsg, {"uids": [uid], "tokens": [False], "finish": [None]}, "TokensMsg.tokens[0]"),
        (ReplyMsg, {"uid": uid, "text": "t", "finish_reason": 3}, "ReplyMsg.finish_reason"),
        (TokenizeMsg, {"uid": uid, "prompt": "p", "chat": 1, "sampling_params": {}, "max_tokens": None},
         "TokenizeMsg.chat"),
        (StatsReplyMsg, {"uid": uid, "stats": {"a": "b"}}, "StatsReplyMsg.stats"),
    ]
    for cls, body, path in cases:
        message = built_refusal(cls, body, cls.__name__)
        assert path in message, f"{cls.__name__} {body}: the message names {path!r}; it was {message!r}"
    message = built_refusal(AbortMsg, {"uid": "x"}, "Outer.inner")
    assert "Outer.inner.uid" in message, f"the path starts with `where`; got {message!r}"
    msg = _build(ReplyMsg, {"uid": uid, "text": "", "prompt_tokens": 2}, "ReplyMsg")
    assert plain(msg) == plain(ReplyMsg(uid=uid, text="", prompt_tokens=2)), "a ReplyMsg with defaults"


SAMPLES = [
    TokenizeMsg(uid=1, prompt="héllo 你好 😀", chat=False, sampling_params=SamplingParams(), max_tokens=None),
    TokenizeMsg(uid=2, prompt=[{"role": "user", "content": "hi"}], chat=True,
                sampling_params=SamplingParams(temperature=0.7, top_k=5, top_p=0.9, seed=3, max_tokens=9),
                max_tokens=9, stop=["\n", "END"]),
    TokenizeMsg(uid=3, prompt=[1, 2, 3], chat=False, sampling_params=SamplingParams(ignore_eos=True), max_tokens=4),
    UserMsg(uid=4, input_ids=[0, 49151], sampling_params=SamplingParams(max_tokens=2)),
    StreamMsg(uid=5, prompt_tokens=7, stop=["x"]),
    TokensMsg(uids=[1, 2, 3], tokens=[10, -1, 2], finish=[None, "abort", "stop"]),
    ReplyMsg(uid=6, text="¡olé! 🎉", finish_reason="length", prompt_tokens=3, completion_tokens=5),
    ReplyMsg(uid=7, text="", error="too long", status=400, param="max_tokens"),
    ErrorMsg(uid=8, message="no", status=400, param=None),
    AbortMsg(uid=9),
    StatsMsg(uid=10),
    StatsReplyMsg(uid=11, stats={"free_pages": 3}, errors=["page 1 is lost"]),
]


def test_decode_round_trips_every_message_type():
    """decode(encode(msg)) is msg, for every message type, with the Python type of every field."""
    assert sorted({type(m).__name__ for m in SAMPLES}) == sorted(MESSAGES), "a sample of each type"
    for m in SAMPLES:
        assert plain(decode(encode(m))) == plain(m), f"{type(m).__name__} round-trips"


def corrupt(g, body: dict) -> dict:
    """body with one random change (or none)."""
    body = dict(body)
    kind = g.choice(["none", "drop", "add", "bool", "str", "float", "nil", "list"])
    name = g.choice(sorted(body))
    if kind == "drop":
        del body[name]
    elif kind == "add":
        body[g.choice(["extra", "uid2", 3])] = 1
    elif kind == "bool":
        body[name] = g.random() < 0.5
    elif kind == "str":
        body[name] = "1"
    elif kind == "float":
        body[name] = 2.0
    elif kind == "nil":
        body[name] = None
    elif kind == "list":
        body[name] = [body[name]] if g.random() < 0.5 else [g.randint(0, 9), "x"]
    return body


def outcome(frame: bytes):
    """What decode makes of a frame: ("ok", the message as plain data) or ("refused",)."""
    try:
        return ("ok", plain(decode(frame)))
    except MessageError:
        return ("refused",)


def test_random_frames_like_the_engine():
    """Random one-field corruptions of every message type (nested SamplingParams included): decode accepts or
    refuses each exactly as the engine does, and builds the same message."""
    g = rng()
    for _ in range(60):
        m = g.choice(SAMPLES)
        body = {f.name: getattr(m, f.name) for f in dataclasses.fields(m)}
        if "sampling_params" in body:
            body["sampling_params"] = dataclasses.asdict(body["sampling_params"])
            if g.random() < 0.5:
                body["sampling_params"] = corrupt(g, body["sampling_params"])
            else:
                body = corrupt(g, body)
        else:
            body = corrupt(g, body)
        frame = msgpack.packb({"type": type(m).__name__, "body": body})
        got = outcome(frame)
        assert got == expected(lambda: outcome(frame)), f"decode of {type(m).__name__} {body}"
