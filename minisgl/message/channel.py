"""Message channels over ZMQ: PUSH to send, PULL to receive; a received frame that is not a valid message is logged
with what is wrong and skipped, and the channel goes on."""

from __future__ import annotations

import logging
from typing import Any

import zmq
import zmq.asyncio

from minisgl.message.codec import MessageError, decode, encode

logger = logging.getLogger(__name__)  # not minisgl.utils: the API process does without torch


def _socket(ctx: zmq.Context, kind: int, addr: str, bind: bool) -> zmq.Socket:
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)  # closing never waits for a peer that is gone
    if bind:
        sock.bind(addr)
    else:
        sock.connect(addr)
    return sock


class Sender:
    def __init__(self, addr: str, bind: bool = False, ctx: zmq.Context | None = None) -> None:
        self.sock = _socket(ctx or zmq.Context.instance(), zmq.PUSH, addr, bind)

    def send(self, msg: Any) -> None:
        self.sock.send(encode(msg), copy=False)

    def close(self) -> None:
        self.sock.close()


class Receiver:
    def __init__(self, addr: str, bind: bool = True, ctx: zmq.Context | None = None) -> None:
        self.sock = _socket(ctx or zmq.Context.instance(), zmq.PULL, addr, bind)
        self.name = addr

    def _decode(self, frame: bytes) -> Any | None:
        try:
            return decode(frame)
        except MessageError as e:
            logger.error("%s: dropped a frame of %d bytes that is not a valid message: %s", self.name, len(frame), e)
            return None

    def recv(self, timeout_ms: int | None = None) -> list[Any]:
        """Every message waiting now; if none, wait for one up to timeout_ms (None: forever, 0: do not wait)."""
        out: list[Any] = []
        if timeout_ms != 0 and not self.sock.poll(timeout_ms):
            return out
        while True:
            try:
                frame = self.sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return out
            msg = self._decode(frame)
            if msg is not None:
                out.append(msg)

    def close(self) -> None:
        self.sock.close()


class AsyncReceiver(Receiver):
    """For the API process's event loop."""

    def __init__(self, addr: str, bind: bool = True, ctx: zmq.asyncio.Context | None = None) -> None:
        self.sock = _socket(ctx or zmq.asyncio.Context.instance(), zmq.PULL, addr, bind)
        self.name = addr

    async def next(self) -> Any:
        while True:
            msg = self._decode(await self.sock.recv())
            if msg is not None:
                return msg


class AsyncSender(Sender):
    def __init__(self, addr: str, bind: bool = False, ctx: zmq.asyncio.Context | None = None) -> None:
        self.sock = _socket(ctx or zmq.asyncio.Context.instance(), zmq.PUSH, addr, bind)

    async def send(self, msg: Any) -> None:  # type: ignore[override]
        await self.sock.send(encode(msg), copy=False)
