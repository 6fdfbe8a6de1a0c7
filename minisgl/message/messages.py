"""The messages between the server's processes. Who sends what:

    API --TokenizeMsg--> tokenizer --UserMsg--> scheduler --TokensMsg--> detokenizer --ReplyMsg--> API
                         tokenizer --StreamMsg--> detokenizer (the request's prompt length and stop strings)
    API --AbortMsg / StatsMsg--> scheduler;  detokenizer --AbortMsg--> scheduler (a stop string was found)
    tokenizer, scheduler --ErrorMsg--> detokenizer --ReplyMsg(error)--> API
    scheduler --StatsReplyMsg--> detokenizer --> API
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from minisgl.core import SamplingParams

FinishReason = Literal["stop", "length", "abort"]


@dataclass
class TokenizeMsg:
    uid: int
    prompt: str | list[int] | list[dict[str, str]]  # completion text, token ids, or chat messages
    chat: bool  # apply the model's chat template to `prompt` (a list of {"role", "content"})
    sampling_params: SamplingParams  # its max_tokens is replaced by the tokenizer's reckoning of max_tokens below
    max_tokens: int | None  # None: up to the end of the context
    stop: list[str] = field(default_factory=list)


@dataclass
class UserMsg:
    uid: int
    input_ids: list[int]
    sampling_params: SamplingParams


@dataclass
class StreamMsg:
    uid: int
    prompt_tokens: int
    stop: list[str] = field(default_factory=list)


@dataclass
class TokensMsg:
    """One step's new tokens: request uids[i] got tokens[i]; finish[i] is None while it goes on."""

    uids: list[int]
    tokens: list[int]
    finish: list[str | None]


@dataclass
class ReplyMsg:
    uid: int
    text: str  # new text since the last reply
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None  # the request was refused: `text` is empty and the reply is its last
    status: int = 0  # the HTTP status of an error
    param: str | None = None  # the request field an error is about


@dataclass
class ErrorMsg:
    uid: int
    message: str
    status: int = 400
    param: str | None = None


@dataclass
class AbortMsg:
    uid: int


@dataclass
class StatsMsg:
    uid: int


@dataclass
class StatsReplyMsg:
    uid: int
    stats: dict[str, int]
    errors: list[str] = field(default_factory=list)  # the KV bookkeeping's integrity errors (empty when sound)


MESSAGES: dict[str, type] = {cls.__name__: cls for cls in (
    TokenizeMsg, UserMsg, StreamMsg, TokensMsg, ReplyMsg, ErrorMsg, AbortMsg, StatsMsg, StatsReplyMsg)}
