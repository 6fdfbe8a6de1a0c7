"""Every message type round-trips through msgpack exactly; bytes that are not a valid message raise MessageError
naming what is wrong, and a receiving channel logs them and goes on."""

from __future__ import annotations

import logging

import msgpack
import pytest
import zmq

from minisgl.core import SamplingParams
from minisgl.message import (
    MESSAGES,
    AbortMsg,
    ErrorMsg,
    MessageError,
    ReplyMsg,
    StatsMsg,
    StatsReplyMsg,
    StreamMsg,
    TokenizeMsg,
    TokensMsg,
    UserMsg,
    decode,
    encode,
)
from minisgl.message.channel import Receiver

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


def test_every_message_type_round_trips_exactly():
    assert {type(m) for m in SAMPLES} == set(MESSAGES.values()), "a sample of each type"
    for m in SAMPLES:
        back = decode(encode(m))
        assert back == m and type(back) is type(m)
        assert type(back.sampling_params) is SamplingParams if hasattr(back, "sampling_params") else True


def _frame(type_: str, body: dict) -> bytes:
    return msgpack.packb({"type": type_, "body": body})


BAD = [
    (b"", "not msgpack"),
    (b"\xc1", "not msgpack"),
    (encode(AbortMsg(uid=1))[:-1], "not msgpack"),
    (msgpack.packb([1, 2]), "not a message"),
    (_frame("EvilMsg", {}), "unknown message type"),
    (_frame("AbortMsg", {}), "missing fields ['uid']"),
    (_frame("AbortMsg", {"uid": "1"}), "AbortMsg.uid: expected int, got str"),
    (_frame("AbortMsg", {"uid": True}), "AbortMsg.uid: expected int, got bool"),
    (_frame("AbortMsg", {"uid": 1, "x": 2}), "unknown fields ['x']"),
    (_frame("TokensMsg", {"uids": [1], "tokens": ["a"], "finish": [None]}), "TokensMsg.tokens[0]"),
    (_frame("TokensMsg", {"uids": [1], "tokens": [1], "finish": ["maybe"]}), None),  # a str: valid as a type
    (_frame("UserMsg", {"uid": 1, "input_ids": [1], "sampling_params": {"max_tokens": -3}}), "max_tokens"),
    (_frame("UserMsg", {"uid": 1, "input_ids": [1], "sampling_params": {"temprature": 1}}), "unknown fields"),
    (_frame("UserMsg", {"uid": 1, "input_ids": [1], "sampling_params": [1]}), "expected a map"),
]


@pytest.mark.parametrize("data,why", BAD)
def test_bytes_that_are_not_a_valid_message_raise_message_error_saying_what(data, why):
    if why is None:
        decode(data)
        return
    with pytest.raises(MessageError, match=__import__("re").escape(why)):
        decode(data)


def test_a_channel_logs_a_bad_frame_and_goes_on(tmp_path, caplog):
    addr = f"ipc://{tmp_path}/in"
    rx = Receiver(addr, bind=True)
    tx = zmq.Context.instance().socket(zmq.PUSH)
    tx.connect(addr)
    for data, _ in BAD[:4]:
        tx.send(data)
    tx.send(encode(AbortMsg(uid=42)))
    got = []
    with caplog.at_level(logging.ERROR, logger="minisgl.message.channel"):
        while not got:
            got = rx.recv(2000)
    assert got == [AbortMsg(uid=42)]
    assert sum("not a valid message" in r.message for r in caplog.records) == 4
    tx.close(0)
    rx.close()
