"""recv polls with the full timeout before every frame: with messages waiting it still sits out the whole timeout after the last one."""

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
        while self.sock.poll(0 if timeout_ms is None and out else timeout_ms):
            frame = self.sock.recv()
            msg = self._decode(frame)
            if msg is not None:
                out.append(msg)
        return out
