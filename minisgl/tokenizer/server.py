"""The tokenizer and detokenizer workers' loop (the book's chapter 13). A tokenizer turns TokenizeMsg into the
scheduler's UserMsg (and tells the detokenizer the request's prompt length and stop strings); the detokenizer turns
each step's tokens into text for the API, ends a request at a stop string (and aborts it in the scheduler), and
forwards errors and stats. With no tokenizer workers, the detokenizer tokenizes too."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from minisgl.message import (
    AbortMsg,
    ErrorMsg,
    ReplyMsg,
    StatsReplyMsg,
    StreamMsg,
    TokenizeMsg,
    TokensMsg,
    UserMsg,
)
from minisgl.message.channel import Receiver, Sender
from minisgl.tokenizer.detokenize import IncrementalDetokenizer
from minisgl.tokenizer.tokenize import TokenizeManager
from minisgl.utils import init_logger

logger = init_logger(__name__)

_REMEMBERED = 4096  # uids kept for messages that may arrive out of order


@dataclass
class _Stream:
    detok: IncrementalDetokenizer
    prompt_tokens: int
    completion_tokens: int = 0


def _remember(d: OrderedDict, key: int, value: Any) -> None:
    d[key] = value
    while len(d) > _REMEMBERED:
        d.popitem(last=False)


class TokenizerServer:
    def __init__(self, tokenizer: Any, max_seq_len: int, inbox: Receiver, to_scheduler: Sender,
                 to_detokenizer: Sender | None, to_api: Sender | None) -> None:
        """A tokenizer has `to_detokenizer`; the detokenizer has `to_api`; one that does both has `to_api` only."""
        self.tokenizer = tokenizer
        self.tokenize_manager = TokenizeManager(tokenizer, max_seq_len)
        self.inbox, self.to_scheduler = inbox, to_scheduler
        self.to_detokenizer, self.to_api = to_detokenizer, to_api
        self.streams: dict[int, _Stream] = {}
        self.early: OrderedDict[int, list[tuple[int, str | None]]] = OrderedDict()  # tokens before their StreamMsg
        self.closed: OrderedDict[int, None] = OrderedDict()  # ended at a stop string; late tokens are dropped

    # -- tokenizing
    def _tokenize(self, msg: TokenizeMsg) -> None:
        out = self.tokenize_manager.tokenize(msg)
        if isinstance(out, ErrorMsg):
            self._to_detokenizer(out)
            return
        self._to_detokenizer(StreamMsg(uid=msg.uid, prompt_tokens=len(out.input_ids), stop=msg.stop))
        self.to_scheduler.send(out)  # after the StreamMsg: the detokenizer knows the stream before its tokens

    def _to_detokenizer(self, msg: Any) -> None:
        if self.to_detokenizer is not None:
            self.to_detokenizer.send(msg)
        else:
            self.handle(msg)

    # -- detokenizing
    def _reply(self, uid: int, st: _Stream, text: str, finish: str | None) -> None:
        assert self.to_api is not None
        self.to_api.send(ReplyMsg(uid=uid, text=text, finish_reason=finish, prompt_tokens=st.prompt_tokens,
                                  completion_tokens=st.completion_tokens))

    def _start(self, msg: StreamMsg) -> None:
        self.streams[msg.uid] = _Stream(IncrementalDetokenizer(self.tokenizer, msg.stop), msg.prompt_tokens)
        for token, finish in self.early.pop(msg.uid, []):
            self._token(msg.uid, token, finish)

    def _token(self, uid: int, token: int, finish: str | None) -> None:
        if uid in self.closed:
            if finish is not None:
                del self.closed[uid]
            return
        st = self.streams.get(uid)
        if st is None:
            self.early.setdefault(uid, []).append((token, finish))
            self.early.move_to_end(uid)
            while len(self.early) > _REMEMBERED:
                self.early.popitem(last=False)
            return
        text = ""
        if token >= 0:  # an abort carries no token
            st.completion_tokens += 1
            text = st.detok.add([token])
        if not st.detok.stopped and finish is not None:
            text += st.detok.finish()
        if st.detok.stopped:
            del self.streams[uid]
            self._reply(uid, st, text, "stop")
            if finish is None:  # the scheduler still runs it
                self.to_scheduler.send(AbortMsg(uid=uid))
                _remember(self.closed, uid, None)
            return
        if finish is not None:
            del self.streams[uid]
            self._reply(uid, st, text, finish)
        elif text:
            self._reply(uid, st, text, None)

    def handle(self, msg: Any) -> None:
        if isinstance(msg, TokenizeMsg):
            self._tokenize(msg)
        elif self.to_api is None:
            logger.error("tokenizer: ignored a %s (not for a tokenizer)", type(msg).__name__)
        elif isinstance(msg, StreamMsg):
            self._start(msg)
        elif isinstance(msg, TokensMsg):
            for uid, token, finish in zip(msg.uids, msg.tokens, msg.finish, strict=True):
                self._token(uid, token, finish)
        elif isinstance(msg, ErrorMsg):
            self.streams.pop(msg.uid, None)
            self.early.pop(msg.uid, None)
            self.to_api.send(ReplyMsg(uid=msg.uid, text="", finish_reason="error", error=msg.message,
                                      status=msg.status, param=msg.param))
        elif isinstance(msg, StatsReplyMsg):
            self.to_api.send(msg)
        elif isinstance(msg, (UserMsg, AbortMsg)):
            logger.error("detokenizer: ignored a %s (for the scheduler)", type(msg).__name__)
        else:
            logger.error("detokenizer: ignored a %s", type(msg).__name__)

    def serve_forever(self) -> None:
        while True:
            for msg in self.inbox.recv(None):
                try:
                    self.handle(msg)
                except Exception:  # one bad request must not stop the worker
                    logger.exception("%s failed; the worker goes on", type(msg).__name__)
