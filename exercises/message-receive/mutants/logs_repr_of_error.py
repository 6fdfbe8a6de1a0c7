"""the log shows repr(e), which escapes quotes and backslashes instead of str(e)."""


from __future__ import annotations

from typing import Any

import zmq  # noqa: F401

from minisgl.message.codec import MessageError, decode  # noqa: F401

# Reference solution: the engine's own code, taken from minisgl/message/channel.py.


class Receiver:
    def _decode(self, frame: bytes) -> Any | None:
        try:
            return decode(frame)
        except MessageError as e:
            logger.error("%s: dropped a frame that is not a valid message: %r", self.name, e)
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
