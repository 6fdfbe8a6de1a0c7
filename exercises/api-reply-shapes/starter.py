"""Exercise api-reply-shapes: ApiError.body, completion, chunk and stream_chunks.

Your code runs as if written in minisgl/server/protocol.py: time, usage(prompt_tokens, completion_tokens) and
Generation are available. The class is the engine's ApiError (attributes status, message, param, error_code):
write body inside this stub.
"""

from __future__ import annotations

import time
from typing import Any

from minisgl.server.protocol import Generation, usage


class ApiError:
    def body(self) -> dict[str, Any]:
        """{"error": {"message", "type", "param", "code"}}; type from the status (401, 503, < 500, >= 500)."""
        raise NotImplementedError("write body")


def completion(uid: int, model: str, chat: bool, text: str, finish: str, prompt_tokens: int,
               completion_tokens: int) -> dict[str, Any]:
    """The whole reply: id, object, created, model, one choice (message or text), usage."""
    raise NotImplementedError("write completion")


def chunk(uid: int, model: str, chat: bool, text: str | None, finish: str | None, first: bool = False,
          usage_: dict[str, int] | None = None) -> dict[str, Any]:
    """One SSE chunk: new text, or the finish reason, or (usage_ given) the usage chunk with no choices."""
    raise NotImplementedError("write chunk")


def stream_chunks(uid: int, model: str, gen: Generation, text: str, finish: str | None, prompt_tokens: int,
                  completion_tokens: int, first: bool) -> list[dict[str, Any]]:
    """The chunks one reply of a stream becomes: its text (always for the first reply), then, when it finishes,
    the finish chunk and (gen.include_usage) the usage chunk."""
    raise NotImplementedError("write stream_chunks")
