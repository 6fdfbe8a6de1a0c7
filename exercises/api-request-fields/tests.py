"""Tests for api-request-fields: _int, _num and _stop on request bodies, and the engine's parse (which calls them) on
whole requests: the Generation it builds, or the 400 naming the bad field."""

import math

from judge.testing import rng
from minisgl.server.protocol import _INT_MAX, ApiError, _int, _num, _stop, parse

MODELS = ("tiny-qwen3",)
HUGE = "9" * 5000 + "x" * 5000  # a megabyte would do the same: the message must not echo it whole


def outcome(fn, *args, **kw) -> tuple:
    """("ok", value, type name) or ("refused", status, param, message) or ("raised", exception type name)."""
    try:
        v = fn(*args, **kw)
    except ApiError as e:
        return ("refused", e.status, e.param, e.message)
    except Exception as e:  # noqa: BLE001 - a wrong exception is a finding, not a crash of the test
        return ("raised", type(e).__name__, str(e)[:200])
    return ("ok", v, type(v).__name__)


def check_refused(field: str, got: tuple, what: str) -> None:
    assert got[0] == "refused", f"{what}: must raise ApiError (400, param {field!r}); got {got[:3]}"
    status, param, message = got[1], got[2], got[3]
    assert status == 400, f"{what}: the ApiError's status must be 400"
    assert param == field, f"{what}: the ApiError's param must be the field's name {field!r}"
    assert isinstance(message, str) and message.startswith(field), \
        f"{what}: the message must start with the field's name {field!r}; it was {str(message)[:120]!r}"
    assert len(message) <= 300, f"{what}: the message must be at most 300 characters, not {len(message)}"


def int_refused(body: dict, name: str, *bounds, **kw) -> None:
    check_refused(name, outcome(_int, body, name, *bounds, **kw), f"_int({body!r:.80}, {name!r}, {bounds}, {kw})")


def int_ok(body: dict, name: str, *bounds, want, **kw) -> None:
    got = outcome(_int, body, name, *bounds, **kw)
    assert got == ("ok", want, type(want).__name__), \
        f"_int({body!r}, {name!r}, {bounds}, {kw}): (ok, value, type)"


def num_refused(body: dict, name: str, *args, **kw) -> None:
    check_refused(name, outcome(_num, body, name, *args, **kw), f"_num({body!r:.80}, {name!r}, {args}, {kw})")


def num_ok(body: dict, name: str, *args, want, **kw) -> None:
    got = outcome(_num, body, name, *args, **kw)
    assert got == ("ok", want, type(want).__name__), \
        f"_num({body!r}, {name!r}, {args}, {kw}): (ok, value, type): the value as a float"


def stop_refused(v) -> None:
    check_refused("stop", outcome(_stop, {"stop": v}), f"_stop({{'stop': {v!r:.80}}})")


def stop_ok(body: dict, want) -> None:
    got = outcome(_stop, body)
    assert got == ("ok", want, "list"), f"_stop({body!r}): (ok, the stop strings, a list)"


# ------------------------------------------------------------------------------------------- examples

def test_example_int():
    """max_tokens (at least 1): 5 is fine, absent is None; true and 0 are refused with a 400 naming the field."""
    int_ok({"max_tokens": 5}, "max_tokens", 1, want=5)
    int_ok({}, "max_tokens", 1, want=None)
    int_refused({"max_tokens": True}, "max_tokens", 1)
    int_refused({"max_tokens": 0}, "max_tokens", 1)


def test_example_num_and_stop():
    """temperature 0.7 is fine, NaN is refused; top_p 0 is refused ((0, 1]); one stop string becomes a list."""
    num_ok({"temperature": 0.7}, "temperature", 0.0, 2.0, want=0.7)
    num_refused({"temperature": math.nan}, "temperature", 0.0, 2.0)
    num_refused({"top_p": 0}, "top_p", 0.0, 1.0, lo_open=True)
    stop_ok({"stop": "\n\n"}, ["\n\n"])


# ------------------------------------------------------------------------------------------- _int

def test_int_absent_or_null():
    """An absent field and a null one are both None."""
    g = rng()
    name = g.choice(["seed", "top_k", "max_tokens", "n"])
    int_ok({}, name, want=None)
    int_ok({name: None}, name, want=None)
    int_ok({"other": 3, name: None}, name, 1, 9, want=None)


def test_int_refuses_other_types():
    """true, false, floats (whole ones too), strings, lists and objects are not integers."""
    g = rng()
    name = g.choice(["seed", "top_k", "max_tokens"])
    k = g.randint(3, 90)
    for v in (True, False, float(k), k + 0.5, str(k), [k], {"v": k}):
        int_refused({name: v}, name)
        int_refused({name: v}, name, -5, 100)


def test_int_range_both_ends_included():
    """[lo, hi]: lo and hi are allowed, lo - 1 and hi + 1 refused; random bounds and values inside."""
    g = rng()
    int_ok({"max_tokens": 1}, "max_tokens", 1, want=1)
    int_refused({"max_tokens": 0}, "max_tokens", 1)
    int_refused({"max_tokens": -g.randint(1, 50)}, "max_tokens", 1)
    int_ok({"top_k": -1}, "top_k", -1, want=-1)
    int_refused({"top_k": -2}, "top_k", -1)
    for _ in range(5):
        lo = g.randint(-300, 300)
        hi = lo + g.randint(3, 500)
        mid = g.randint(lo + 1, hi - 1)
        int_ok({"x": lo}, "x", lo, hi, want=lo)
        int_ok({"x": hi}, "x", lo, hi, want=hi)
        int_ok({"x": mid}, "x", lo, hi, want=mid)
        int_refused({"x": lo - 1}, "x", lo, hi)
        int_refused({"x": hi + 1}, "x", lo, hi)
        int_refused({"x": hi + g.randint(2, 10**6)}, "x", lo, hi)
        int_refused({"x": lo - g.randint(2, 10**6)}, "x", lo, hi)


def test_int_default_bounds():
    """Without bounds the range is [-_INT_MAX, _INT_MAX] (2**31 - 1): a 2**70 never reaches msgpack or torch."""
    g = rng()
    int_ok({"x": _INT_MAX}, "x", want=_INT_MAX)
    int_ok({"x": -_INT_MAX}, "x", want=-_INT_MAX)
    int_refused({"x": _INT_MAX + 1}, "x")
    int_refused({"x": -_INT_MAX - 1}, "x")
    int_refused({"x": 2**70}, "x")
    int_refused({"x": -(2**70)}, "x")
    v = g.randint(-10**6, 10**6)
    int_ok({"x": v}, "x", want=v)
    int_refused({"top_k": _INT_MAX + g.randint(2, 10**9)}, "top_k", -1)  # lo given, hi the default
    int_refused({"x": -_INT_MAX - g.randint(2, 10**9)}, "x", hi=5)  # hi given, lo the default
    int_ok({"x": -_INT_MAX}, "x", hi=5, want=-_INT_MAX)


def test_int_messages_are_short():
    """A huge value where an integer belongs: refused with a message of at most 300 characters."""
    int_refused({"seed": HUGE}, "seed")
    int_refused({"max_tokens": [HUGE, HUGE]}, "max_tokens", 1)
    int_refused({"top_k": 10**1000}, "top_k", -1)


def shows_value(fn, body: dict, name: str, *args, **kw) -> None:
    v = body[name]
    got = outcome(fn, body, name, *args, **kw)
    check_refused(name, got, f"{fn.__name__}({body!r}, {name!r}, {args}, {kw})")
    assert str(v) in got[3] or repr(v) in got[3], \
        f"{fn.__name__}: the message must show the value sent ({v!r}); it was {got[3]!r}"


def test_messages_show_the_value():
    """_int's and _num's messages show the value that was sent (wrong type, or out of range)."""
    g = rng()
    k = g.randint(10**4, 10**6)
    shows_value(_int, {"max_tokens": -k}, "max_tokens", 1)
    shows_value(_int, {"top_k": k}, "top_k", -1, 100)
    shows_value(_int, {"seed": f"s{k}"}, "seed")
    shows_value(_int, {"seed": k + 0.25}, "seed")
    shows_value(_num, {"temperature": k + 0.5}, "temperature", 0.0, 2.0)
    shows_value(_num, {"top_p": -k - 0.75}, "top_p", 0.0, 1.0, lo_open=True)
    shows_value(_num, {"temperature": f"t{k}"}, "temperature", 0.0, 2.0)
    shows_value(_num, {"temperature": [k]}, "temperature", 0.0, 2.0)


# ------------------------------------------------------------------------------------------- _num

def test_num_absent_or_null():
    """An absent field and a null one are both None."""
    num_ok({}, "temperature", 0.0, 2.0, want=None)
    num_ok({"temperature": None}, "temperature", 0.0, 2.0, want=None)
    num_ok({"top_p": None}, "top_p", 0.0, 1.0, lo_open=True, want=None)


def test_num_returns_a_float():
    """An int is accepted and returned as a float; a float as itself."""
    g = rng()
    num_ok({"temperature": 1}, "temperature", 0.0, 2.0, want=1.0)
    num_ok({"temperature": 0}, "temperature", 0.0, 2.0, want=0.0)
    num_ok({"top_p": 1}, "top_p", 0.0, 1.0, lo_open=True, want=1.0)
    k = g.randint(3, 40)
    num_ok({"x": k}, "x", -50.0, 50.0, want=float(k))
    v = round(g.uniform(0.01, 1.99), 3)
    num_ok({"temperature": v}, "temperature", 0.0, 2.0, want=v)


def test_num_refuses_other_types():
    """true, false, strings (even "0.5"), lists and objects are not numbers."""
    g = rng()
    v = round(g.uniform(0.1, 0.9), 2)
    for bad in (True, False, str(v), "1", [v], {"v": v}):
        num_refused({"temperature": bad}, "temperature", 0.0, 2.0)
        num_refused({"top_p": bad}, "top_p", 0.0, 1.0, lo_open=True)


def test_num_refuses_nan_and_infinities():
    """NaN, Infinity and -Infinity (Python's json accepts them) are refused, whatever the range."""
    for bad in (math.nan, math.inf, -math.inf):
        num_refused({"temperature": bad}, "temperature", 0.0, 2.0)
        num_refused({"x": bad}, "x", -math.inf, math.inf)
        num_refused({"top_p": bad}, "top_p", 0.0, 1.0, lo_open=True)


def test_num_range_edges():
    """[lo, hi] includes both ends; with lo_open, (lo, hi] refuses lo; out of range is refused."""
    g = rng()
    num_ok({"temperature": 0.0}, "temperature", 0.0, 2.0, want=0.0)
    num_ok({"temperature": 2.0}, "temperature", 0.0, 2.0, want=2.0)
    num_refused({"temperature": 2.01}, "temperature", 0.0, 2.0)
    num_refused({"temperature": -0.01}, "temperature", 0.0, 2.0)
    num_refused({"top_p": 0.0}, "top_p", 0.0, 1.0, lo_open=True)
    num_ok({"top_p": 1.0}, "top_p", 0.0, 1.0, lo_open=True, want=1.0)
    num_refused({"top_p": 1.5}, "top_p", 0.0, 1.0, lo_open=True)
    num_refused({"top_p": -0.5}, "top_p", 0.0, 1.0, lo_open=True)
    num_ok({"top_p": 1e-9}, "top_p", 0.0, 1.0, lo_open=True, want=1e-9)
    for _ in range(5):
        lo = round(g.uniform(-5.0, 5.0), 2)
        hi = round(lo + g.uniform(0.5, 5.0), 2)
        mid = round(g.uniform(lo + 0.1, hi - 0.1), 3)
        num_ok({"x": lo}, "x", lo, hi, want=lo)
        num_ok({"x": hi}, "x", lo, hi, want=hi)
        num_ok({"x": mid}, "x", lo, hi, lo_open=True, want=mid)
        num_ok({"x": hi}, "x", lo, hi, lo_open=True, want=hi)
        num_refused({"x": lo}, "x", lo, hi, lo_open=True)
        num_refused({"x": round(hi + g.uniform(0.01, 3.0), 3)}, "x", lo, hi)
        num_refused({"x": round(lo - g.uniform(0.01, 3.0), 3)}, "x", lo, hi)
        num_refused({"x": round(lo - g.uniform(0.01, 3.0), 3)}, "x", lo, hi, lo_open=True)


def test_num_messages_are_short():
    """A huge string where a number belongs, or an integer of hundreds of digits (JSON allows it; too big for a
    float): refused with a message of at most 300 characters."""
    num_refused({"temperature": HUGE}, "temperature", 0.0, 2.0)
    num_refused({"top_p": [HUGE]}, "top_p", 0.0, 1.0, lo_open=True)
    for digits in (301, 400):
        num_refused({"temperature": 10**digits}, "temperature", 0.0, 2.0)
        num_refused({"top_p": -(10**digits)}, "top_p", 0.0, 1.0, lo_open=True)


# ------------------------------------------------------------------------------------------- _stop

def test_stop_absent_or_null():
    """No stop strings: []."""
    stop_ok({}, [])
    stop_ok({"stop": None}, [])


def test_stop_forms():
    """One string -> [it] (not its characters); a list of 0 to 4 strings -> those strings, in order."""
    g = rng()
    words = ["".join(g.choice("abcxyz .\n") for _ in range(g.randint(2, 6))) for _ in range(4)]
    stop_ok({"stop": words[0]}, [words[0]])
    stop_ok({"stop": "x"}, ["x"])
    stop_ok({"stop": []}, [])
    for n in (1, 2, 3, 4):
        stop_ok({"stop": words[:n]}, words[:n])
    shuffled = words[:]
    g.shuffle(shuffled)
    stop_ok({"stop": shuffled}, shuffled)
    stop_ok({"stop": [words[1], words[1]]}, [words[1], words[1]])  # each one kept, a repeated one too


def test_stop_refuses_non_strings():
    """A number, an object, true, or a list holding a non-string is refused."""
    g = rng()
    k = g.randint(2, 99)
    for bad in (k, k + 0.5, True, {"s": "a"}, ["a", k], [None], ["a", ["b"]], [{"s": "a"}], ("a", "b")):
        stop_refused(bad)  # a tuple too: only a str or a list (what JSON gives) is taken


def test_stop_at_most_four():
    """Five or more stop strings are refused."""
    g = rng()
    for n in (5, 6, g.randint(7, 30)):
        stop_refused([f"s{i}" for i in range(n)])


def test_stop_refuses_empty_strings():
    """An empty stop string, alone or anywhere in the list, is refused."""
    g = rng()
    stop_refused("")
    stop_refused([""])
    words = ["ab", "c", "de"]
    words.insert(g.randrange(4), "")
    stop_refused(words)


def test_stop_messages_are_short():
    """A huge bad stop: refused with a message of at most 300 characters."""
    stop_refused([HUGE, 5])
    stop_refused([HUGE] * 5)
    stop_refused(10**1000)


# ------------------------------------------------------------------------------------------- through parse

def generation(body: dict, chat: bool = False) -> tuple:
    """What parse made of the body, as plain data, or the refusal."""
    try:
        gen = parse(body, chat, MODELS)
    except ApiError as e:
        return ("refused", e.status, e.param)
    except Exception as e:  # noqa: BLE001
        return ("raised", type(e).__name__, str(e)[:200])
    p = gen.params
    return ("ok", gen.max_tokens, p.temperature, p.top_p, p.top_k, p.seed, gen.stop)


def test_parse_builds_the_generation():
    """Random good requests: the Generation carries each field as given (floats for the numbers); absent fields
    get parse's defaults."""
    g = rng()
    for _ in range(12):
        body = {"model": MODELS[0], "prompt": "Hello"}
        want = {"max_tokens": 16, "temperature": 1.0, "top_p": 1.0, "top_k": -1, "seed": None, "stop": []}
        if g.random() < 0.7:
            body["max_tokens"] = want["max_tokens"] = g.randint(2, 4000)
        if g.random() < 0.7:
            t = g.choice([0, 1, 2, round(g.uniform(0.01, 1.99), 2)])
            body["temperature"], want["temperature"] = t, float(t)
        if g.random() < 0.7:
            t = g.choice([1, round(g.uniform(0.01, 0.99), 2)])
            body["top_p"], want["top_p"] = t, float(t)
        if g.random() < 0.7:
            body["top_k"] = want["top_k"] = g.choice([-1, 1, g.randint(2, 500), _INT_MAX])
        if g.random() < 0.7:
            body["seed"] = want["seed"] = g.choice([0, g.randint(1, 2**40), 2**63 - 1])
        if g.random() < 0.7:
            stops = [g.choice(["\n", "END", ".", "##", "Q:"]) for _ in range(g.randint(1, 4))]
            if len(stops) == 1 and g.random() < 0.5:
                body["stop"] = stops[0]
            else:
                body["stop"] = stops
            want["stop"] = stops
        for k in list(body):
            if k not in ("model", "prompt") and g.random() < 0.15:
                body[k] = None  # null: as if absent
                want[k] = {"max_tokens": 16, "temperature": 1.0, "top_p": 1.0, "top_k": -1, "seed": None,
                           "stop": []}[k]
        got = generation(body)
        w = ("ok", want["max_tokens"], want["temperature"], want["top_p"], want["top_k"], want["seed"], want["stop"])
        assert got == w, f"parse({body}): (ok, max_tokens, temperature, top_p, top_k, seed, stop)"
        kinds = tuple(type(x).__name__ for x in got[2:4])
        assert kinds == ("float", "float"), "temperature and top_p reach SamplingParams as floats"


def test_parse_refuses_the_bad_field():
    """One bad field in an otherwise good request: parse raises a 400 naming that field."""
    g = rng()
    bad = [("max_tokens", 0), ("max_tokens", True), ("max_tokens", 2**70), ("max_tokens", 3.0),
           ("temperature", math.nan), ("temperature", 2.5), ("temperature", "0.5"), ("top_p", 0), ("top_p", True),
           ("top_p", math.inf), ("top_k", -2), ("top_k", 2**31), ("seed", -1), ("seed", 2**63), ("seed", False),
           ("stop", ""), ("stop", ["a", 1]), ("stop", ["a", "b", "c", "d", "e"]), ("stop", 3)]
    for field, value in g.sample(bad, 10) + [("top_p", 0.0), ("max_tokens", False)]:
        body = {"model": MODELS[0], "prompt": "Hello", "max_tokens": 4, "temperature": 0.5, field: value}
        got = generation(body)
        assert got == ("refused", 400, field), f"parse with {field}={value!r}: (refused, 400, the field)"
    body = {"model": MODELS[0], "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 0}
    assert generation(body, chat=True) == ("refused", 400, "max_completion_tokens"), \
        "a chat request's max_completion_tokens of 0: (refused, 400, the field)"
