"""Exercise message-receive: Receiver._decode and Receiver.recv.

Your code runs as if written in minisgl/message/channel.py: its imports and globals are available (zmq, decode,
MessageError, and logger, the module's logging.Logger "minisgl.message.channel"). The class is the engine's:
write the methods inside this stub. Already there: self.sock (a ZMQ PULL socket) and self.name (its address).
"""

from __future__ import annotations

from typing import Any

import zmq  # noqa: F401

from minisgl.message.codec import MessageError, decode  # noqa: F401


class Receiver:
    def _decode(self, frame: bytes) -> Any | None:
        """The message `frame` encodes, or None when it is not a valid message: then log an error (on `logger`)
        that names this receiver (self.name) and says what is wrong (the MessageError's text)."""
        raise NotImplementedError("write _decode")

    def recv(self, timeout_ms: int | None = None) -> list[Any]:
        """Every message waiting now, in arrival order; if none, wait for one up to timeout_ms milliseconds
        (None: forever, 0: do not wait). Frames that are not valid messages are logged and skipped."""
        raise NotImplementedError("write recv")
