"""_decode, "logs one record ... whose formatted message contains the receiver's name": only the first bad frame's
record names the receiver; the later ones carry the reason only."""

from __future__ import annotations

from typing import Any

import zmq  # noqa: F401

from minisgl.message.codec import MessageError, decode  # noqa: F401


class Receiver:
    def _decode(self, frame: bytes) -> Any | None:
        try:
            return decode(frame)
        except MessageError as e:
            if getattr(self, '_logged', False):
                logger.error("dropped a frame: %s", e)
            else:
                self._logged = True
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
