"""recv keeps _decode's None for a bad frame in the list."""

from __future__ import annotations

from typing import Any

import zmq

from minisgl.message.codec import MessageError, decode


class Receiver:
    def _decode(self, frame: bytes) -> Any | None:
        try:
            return decode(frame)
        except MessageError as e:
            logger.error("%s: dropped a frame of %d bytes that is not a valid message: %s", self.name, len(frame), e)
            return None

    def recv(self, timeout_ms: int | None = None) -> list[Any]:
        out: list[Any] = []
        if timeout_ms != 0 and not self.sock.poll(timeout_ms):
            return out
        while True:
            try:
                frame = self.sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return out
            msg = self._decode(frame)
            out.append(msg)
