"""Messages between the server's processes (the book's chapter 12): typed dataclasses, msgpack on the wire."""

from minisgl.message.codec import MessageError, decode, encode
from minisgl.message.messages import (
    MESSAGES,
    AbortMsg,
    ErrorMsg,
    ReplyMsg,
    StatsMsg,
    StatsReplyMsg,
    StreamMsg,
    TokenizeMsg,
    TokensMsg,
    UserMsg,
)

__all__ = [
    "MESSAGES",
    "AbortMsg",
    "ErrorMsg",
    "MessageError",
    "ReplyMsg",
    "StatsMsg",
    "StatsReplyMsg",
    "StreamMsg",
    "TokenizeMsg",
    "TokensMsg",
    "UserMsg",
    "decode",
    "encode",
]
