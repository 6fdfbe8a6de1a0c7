"""A correct _decode and recv written differently: recv waits with a plain blocking recv (with RCVTIMEO for a
timeout) for the first frame, then drains with poll(0)."""

from __future__ import annotations

from typing import Any

import zmq

from minisgl.message.codec import MessageError, decode


class Receiver:
    def _decode(self, frame: bytes) -> Any | None:
        try:
            msg = decode(frame)
        except MessageError as e:
            logger.error(f"skipping a bad frame on {self.name}: {e}")  # noqa: F821 (the module's logger)
            return None
        return msg

    def recv(self, timeout_ms: int | None = None) -> list[Any]:
        frames = []
        if timeout_ms != 0 and self.sock.poll(0) == 0:
            self.sock.setsockopt(zmq.RCVTIMEO, -1 if timeout_ms is None else timeout_ms)
            try:
                frames.append(self.sock.recv())
            except zmq.Again:
                return []
            finally:
                self.sock.setsockopt(zmq.RCVTIMEO, -1)
        while self.sock.poll(0):
            frames.append(self.sock.recv())
        decoded = [self._decode(f) for f in frames]
        return [m for m in decoded if m is not None]
