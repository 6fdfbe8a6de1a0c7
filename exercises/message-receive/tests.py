"""Tests for message-receive: Receiver.recv drains every waiting frame, waits only when nothing is waiting (up to
its timeout), and skips the frames that are not messages; _decode logs each of those as an error."""

import itertools
import logging
import threading
import time
from contextlib import contextmanager

import msgpack
import zmq

from judge.testing import rng
from minisgl.core import SamplingParams
from minisgl.message import AbortMsg, MessageError, ReplyMsg, StatsMsg, TokensMsg, UserMsg, decode, encode
from minisgl.message.channel import Receiver

_names = itertools.count()


class Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@contextmanager
def channel():
    """(a Receiver bound to a fresh inproc address, a PUSH socket connected to it, the log records of the
    channel's logger)."""
    ctx = zmq.Context()
    name = f"inproc://rx-{next(_names)}"
    rx = Receiver(name, bind=True, ctx=ctx)
    tx = ctx.socket(zmq.PUSH)
    tx.setsockopt(zmq.LINGER, 0)
    tx.connect(name)
    log = logging.getLogger("minisgl.message.channel")
    records = Records()
    log.addHandler(records)
    old_level = log.level
    log.setLevel(logging.DEBUG)
    try:
        yield rx, tx, records.records
    finally:
        log.removeHandler(records)
        log.setLevel(old_level)
        tx.close(0)
        rx.sock.close(0)
        ctx.term()


def messages(g, n: int) -> list:
    """n random messages of several types."""
    out = []
    for _ in range(n):
        uid = g.randint(1, 10**6)
        out.append(g.choice([
            AbortMsg(uid=uid),
            StatsMsg(uid=uid),
            UserMsg(uid=uid, input_ids=[g.randint(0, 999) for _ in range(g.randint(1, 5))],
                    sampling_params=SamplingParams(max_tokens=g.randint(2, 30))),
            TokensMsg(uids=[uid], tokens=[g.randint(0, 999)], finish=[g.choice([None, "stop"])]),
            ReplyMsg(uid=uid, text=g.choice(["", "hé", "ok 😀"]), prompt_tokens=g.randint(1, 9)),
        ]))
    return out


BAD = [
    b"",
    b"\xc1",
    msgpack.packb([1, 2]),
    msgpack.packb({"type": "EvilMsg", "body": {}}),
    msgpack.packb({"type": "AbortMsg", "body": {"uid": "7"}}),
    msgpack.packb({"type": "AbortMsg", "body": {"uid": 1, "x": 2}}),
    msgpack.packb({"type": "UserMsg", "body": {"uid": 1, "input_ids": [1], "sampling_params": {"top_k": 0}}}),
    msgpack.packb({"type": "AbortMsg", "body": {"uid": 1, "a\\b 'q' \"d\"": 2}}),  # its error text is not its repr
]


def bad_frames(g, n: int) -> list[bytes]:
    return [g.choice(BAD) for _ in range(n)]


def error_text(frame: bytes) -> str:
    try:
        decode(frame)
    except MessageError as e:
        return str(e)
    raise AssertionError("the test's bad frame decodes")


def plain(msgs) -> list:
    return [(type(m).__name__, repr(m)) for m in msgs]


def drain(rx, want: int, tries: int = 50) -> list:
    """recv(0) until `want` messages came (inproc delivers at once; the tries are a safety net)."""
    got = []
    for _ in range(tries):
        got += rx.recv(0)
        if len(got) >= want:
            break
    return got


def test_example_every_waiting_message_in_one_call():
    """Three messages waiting: recv(0) returns all three, in order, in one call; then nothing is left."""
    g = rng()
    with channel() as (rx, tx, _):
        sent = messages(g, 3)
        for m in sent:
            tx.send(encode(m))
        got = rx.recv(0)
        assert plain(got) == plain(sent), "recv returns every message waiting, in the order sent, in one call"
        assert rx.recv(0) == [], "nothing is left: the next recv(0) returns []"


def test_example_a_bad_frame_is_skipped_and_logged():
    """A bad frame between two messages: both messages come back from the same call, and one error is logged."""
    with channel() as (rx, tx, records):
        tx.send(encode(AbortMsg(uid=41)))
        tx.send(b"\xc1")
        tx.send(encode(StatsMsg(uid=42)))
        got = rx.recv(0)
        assert plain(got) == plain([AbortMsg(uid=41), StatsMsg(uid=42)]), \
            "the bad frame is left out, and the message after it is returned by the same call"
        errors = [r for r in records if r.levelno == logging.ERROR]
        assert len(errors) == 1, f"one error is logged for the bad frame; got {len(errors)}"


def test_nothing_waiting():
    """recv(0) with nothing waiting returns [] at once; recv(timeout) returns [] when the time runs out."""
    g = rng()
    with channel() as (rx, _tx, records):
        assert rx.recv(0) == [], "nothing waiting: recv(0) returns []"
        t0 = time.monotonic()
        got = rx.recv(g.randint(30, 80))
        waited = time.monotonic() - t0
        assert got == [], "nothing came: recv(timeout) returns [] when the time runs out"
        assert waited >= 0.025, "recv(timeout) waits (its timeout is in milliseconds) before giving up"
        assert records == [], "nothing is logged when nothing came"


def test_drains_many_messages_in_order():
    """Many messages waiting: every one of them, in order, from a single call, with 0, a timeout or None."""
    g = rng()
    for timeout in (0, g.randint(200, 600), None):
        with channel() as (rx, tx, _):
            sent = messages(g, g.randint(5, 40))
            for m in sent:
                tx.send(encode(m))
            got = rx.recv(timeout)
            assert plain(got) == plain(sent), f"recv({timeout}) returns all {len(sent)} waiting messages, in order"
            assert rx.recv(0) == [], "nothing is left after one call"


def test_equal_messages_are_each_returned():
    """The same message sent several times (a client that aborts twice): each copy comes back, in order."""
    g = rng()
    with channel() as (rx, tx, _):
        m, other = messages(g, 2)
        sent = [m, other, m, m]
        for x in sent:
            tx.send(encode(x))
        got = rx.recv(0)
        assert plain(got) == plain(sent), "every message waiting is returned, also one equal to an earlier one"


def test_returns_at_once_when_messages_are_waiting():
    """With messages waiting, recv(timeout) returns them without waiting out its timeout."""
    g = rng()
    with channel() as (rx, tx, _):
        sent = messages(g, g.randint(2, 6))
        for m in sent:
            tx.send(encode(m))
        t0 = time.monotonic()
        got = rx.recv(1500)
        quick = time.monotonic() - t0 < 1.0
        assert plain(got) == plain(sent), "every waiting message"
        assert quick, "messages were waiting: recv(1500) must return them at once, not after its timeout"


def send_later(tx, frames: list[bytes], delay: float) -> threading.Thread:
    def run():
        time.sleep(delay)
        for f in frames:
            tx.send(f)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_waits_for_a_message_with_a_timeout():
    """Nothing waiting: recv(timeout) waits, and returns the message that comes during the wait."""
    g = rng()
    with channel() as (rx, tx, _):
        sent = messages(g, 1)
        t = send_later(tx, [encode(m) for m in sent], g.uniform(0.05, 0.1))
        got = rx.recv(g.randint(1000, 2000))
        t.join()
        assert plain(got) == plain(sent), "the message sent during recv's wait is returned (timeout in ms)"


def test_waits_forever_with_none():
    """Nothing waiting: recv(None) waits until a message comes."""
    g = rng()
    with channel() as (rx, tx, _):
        sent = messages(g, 2)
        t = send_later(tx, [encode(m) for m in sent], g.uniform(0.05, 0.1))
        got = rx.recv(None)
        first = len(got)
        t.join()
        got += drain(rx, 2 - len(got)) if len(got) < 2 else []
        assert first >= 1, "recv(None) waits until a message comes: it returned [] before any did"
        assert plain(got) == plain(sent), "the messages, in order (the second one may come with the next call)"


def test_bad_frames_are_skipped_anywhere():
    """Bad frames before, between and after messages: every message comes back from one call, in order."""
    g = rng()
    for _ in range(4):
        with channel() as (rx, tx, records):
            sent = messages(g, g.randint(2, 8))
            frames = [encode(m) for m in sent]
            bad = bad_frames(g, g.randint(1, 4))
            stream = list(frames)
            for b in bad:
                stream.insert(g.randint(0, len(stream)), b)
            stream.insert(0, g.choice(BAD))
            for f in stream:
                tx.send(f)
            got = rx.recv(g.choice([0, 1000, None]))
            assert plain(got) == plain(sent), "each message, in order; no bad frame, no None in the list"
            errors = [r for r in records if r.levelno == logging.ERROR]
            assert len(errors) == len(bad) + 1, f"one error per bad frame ({len(bad) + 1}); got {len(errors)}"


def test_only_bad_frames():
    """Only bad frames waiting: recv(0) returns [] and logs each; the receiver then goes on."""
    g = rng()
    with channel() as (rx, tx, records):
        bad = bad_frames(g, g.randint(2, 5))
        for b in bad:
            tx.send(b)
        got = rx.recv(0)
        assert got == [], "no valid message: []"
        assert len([r for r in records if r.levelno == logging.ERROR]) == len(bad), "one error per bad frame"
        m = AbortMsg(uid=g.randint(1, 10**6))
        tx.send(encode(m))
        assert plain(drain(rx, 1)) == plain([m]), "the receiver goes on: the next message is received"


def test_decode_returns_the_message():
    """_decode of a good frame is the message, and logs nothing."""
    g = rng()
    with channel() as (rx, _tx, records):
        for m in messages(g, 6):
            got = rx._decode(encode(m))
            assert plain([got]) == plain([m]), f"_decode returns the {type(m).__name__} the frame encodes"
        assert records == [], "nothing is logged for good frames"


def test_decode_logs_a_bad_frame_as_an_error():
    """_decode of a bad frame returns None and logs one ERROR naming the receiver and what is wrong."""
    g = rng()
    for frame in g.sample(BAD[:-1], 3) + [BAD[-1]]:
        with channel() as (rx, _tx, records):
            got = rx._decode(frame)
            assert got is None, "a bad frame gives None"
            assert len(records) == 1, f"one record is logged for a bad frame; got {len(records)}"
            record = records[0]
            assert record.levelname == "ERROR", f"the record is an error; it was {record.levelname}"
            text = record.getMessage()
            assert rx.name in text, f"the record names the receiver ({rx.name}); it was {text!r}"
            why = error_text(frame)
            assert why in text, f"the record says what is wrong ({why!r}); it was {text!r}"
    frames = g.sample(BAD, 4)
    with channel() as (rx, _tx, records):
        for frame in frames:
            assert rx._decode(frame) is None, "a bad frame gives None"
        assert len(records) == len(frames), f"one record per bad frame ({len(frames)}); got {len(records)}"
        for record, frame in zip(records, frames):
            text = record.getMessage()
            assert record.levelname == "ERROR", f"every record is an error; one was {record.levelname}"
            assert rx.name in text, f"every record names the receiver ({rx.name}), not only the first; got {text!r}"
            why = error_text(frame)
            assert why in text, f"every record says what is wrong ({why!r}); got {text!r}"
