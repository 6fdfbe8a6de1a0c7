"""The API process (the book's chapter 15): FastAPI routes in OpenAI's shape; each request becomes a TokenizeMsg,
and its replies come back from the detokenizer by uid. A client that goes away aborts its request."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from minisgl.message import AbortMsg, ReplyMsg, StatsMsg, StatsReplyMsg, TokenizeMsg
from minisgl.message.channel import AsyncReceiver, AsyncSender
from minisgl.server import protocol
from minisgl.server.args import ServerArgs
from minisgl.server.protocol import ApiError, Generation

logger = logging.getLogger("minisgl.server")

MAX_BODY = 1 << 20  # bytes of one request's JSON
_POLL_S = 0.5  # how often a waiting request looks whether its client is still there


class Frontend:
    """The API process's end of the pipes: one queue of replies per request in flight."""

    def __init__(self, args: ServerArgs) -> None:
        self.args = args
        self.model_names = (args.served_model_name, args.model)
        self._uids = itertools.count(1)
        self.queues: dict[int, asyncio.Queue[Any]] = {}
        self.dead: str | None = None  # why the server cannot serve (a worker died)
        self._listener: asyncio.Task | None = None

    def connect(self) -> None:
        a = self.args
        self.inbox = AsyncReceiver(a.addr("api"), bind=True)
        # tokenizer workers pull from a socket we bind; without them the detokenizer tokenizes
        self.to_tokenizer = (AsyncSender(a.addr("tokenizer"), bind=True) if a.num_tokenizer > 0
                             else AsyncSender(a.addr("detokenizer")))
        self.to_scheduler = AsyncSender(a.addr("scheduler"))
        self._listener = asyncio.get_running_loop().create_task(self._listen())

    def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
        for s in (self.inbox, self.to_tokenizer, self.to_scheduler):
            s.close()

    async def _listen(self) -> None:
        try:
            while True:
                msg = await self.inbox.next()
                q = self.queues.get(msg.uid)
                if q is not None:  # else its client is gone
                    q.put_nowait(msg)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # nothing would ever answer again: say so rather than hang
            logger.exception("the API's listener failed")
            self.fail_all(f"the API's listener failed: {e}")

    def fail_all(self, why: str) -> None:
        """A worker died: every request in flight ends with a 503, and so does every new one."""
        self.dead = why
        for uid, q in self.queues.items():
            q.put_nowait(ReplyMsg(uid=uid, text="", finish_reason="error", error=why, status=503))

    def _open(self) -> tuple[int, asyncio.Queue[Any]]:
        if self.dead is not None:
            raise ApiError(503, f"the server is stopping: {self.dead}")
        uid = next(self._uids)
        self.queues[uid] = asyncio.Queue()
        return uid, self.queues[uid]

    async def submit(self, gen: Generation) -> tuple[int, asyncio.Queue[Any]]:
        uid, q = self._open()
        await self.to_tokenizer.send(TokenizeMsg(uid=uid, prompt=gen.prompt, chat=gen.chat,
                                                 sampling_params=gen.params, max_tokens=gen.max_tokens, stop=gen.stop))
        return uid, q

    async def abort(self, uid: int) -> None:
        self.queues.pop(uid, None)
        if self.dead is None:
            await self.to_scheduler.send(AbortMsg(uid=uid))

    async def stats(self) -> StatsReplyMsg:
        uid, q = self._open()
        try:
            await self.to_scheduler.send(StatsMsg(uid=uid))
            msg = await asyncio.wait_for(q.get(), 10)
        except TimeoutError:
            raise ApiError(503, "the scheduler did not answer within 10 s") from None
        finally:
            self.queues.pop(uid, None)
        if isinstance(msg, ReplyMsg) and msg.error:
            raise ApiError(msg.status or 503, msg.error)
        return msg


async def _next_reply(q: asyncio.Queue[Any], request: Request) -> ReplyMsg | None:
    """The request's next reply, or None once its client has gone."""
    while True:
        try:
            return await asyncio.wait_for(q.get(), _POLL_S)
        except TimeoutError:
            if await request.is_disconnected():
                return None


def _error(e: ApiError) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status)


def _reply_error(r: ReplyMsg) -> ApiError:
    return ApiError(r.status or 500, r.error or "failed", param=r.param)


async def _read_json(request: Request) -> Any:
    size = 0
    chunks = []
    async for part in request.stream():
        size += len(part)
        if size > MAX_BODY:
            raise ApiError(413, f"the request body exceeds {MAX_BODY} bytes")
        chunks.append(part)
    try:
        return json.loads(b"".join(chunks))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ApiError(400, f"the request body is not valid JSON: {e}") from None
    except RecursionError:
        raise ApiError(400, "the request body is nested too deeply") from None


def _sse(obj: Any) -> bytes:
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode()


def create_app(fe: Frontend, on_ready: Any = None) -> FastAPI:
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        fe.connect()
        if on_ready is not None:
            on_ready()
        yield
        fe.close()

    app = FastAPI(title="minisgl", lifespan=lifespan)  # type: ignore[arg-type]
    model = fe.args.served_model_name

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, e: StarletteHTTPException) -> JSONResponse:
        return _error(ApiError(e.status_code, str(e.detail)))

    @app.exception_handler(ApiError)
    async def api_error(_: Request, e: ApiError) -> JSONResponse:
        return _error(e)

    @app.get("/health")
    async def health() -> JSONResponse:
        if fe.dead is not None:
            return _error(ApiError(503, fe.dead))
        return JSONResponse({"status": "ok"})

    @app.get("/v1/models")
    async def models() -> JSONResponse:
        card = {"id": model, "object": "model", "created": int(time.time()), "owned_by": "minisgl",
                "root": fe.args.model}
        return JSONResponse({"object": "list", "data": [card]})

    @app.get("/stats")
    async def stats() -> JSONResponse:
        """The scheduler's bookkeeping: requests, KV pages (free, cached, evictable), integrity errors."""
        msg = await fe.stats()
        return JSONResponse({**msg.stats, "integrity_errors": msg.errors})

    async def generate(request: Request, chat: bool) -> Response:
        gen = protocol.parse(await _read_json(request), chat, fe.model_names)
        uid, q = await fe.submit(gen)
        try:
            first = await _next_reply(q, request)
        except BaseException:
            await fe.abort(uid)
            raise
        if first is None:
            await fe.abort(uid)
            return Response(status_code=499)
        if first.error:
            fe.queues.pop(uid, None)
            raise _reply_error(first)
        if gen.stream:
            return StreamingResponse(_stream(uid, q, first, gen, request), media_type="text/event-stream")
        text, r = [first.text], first
        try:
            while r.finish_reason is None:
                nxt = await _next_reply(q, request)
                if nxt is None:
                    return Response(status_code=499)
                if nxt.error:
                    raise _reply_error(nxt)
                r = nxt
                text.append(r.text)
        finally:
            if r.finish_reason is None:
                await fe.abort(uid)
            fe.queues.pop(uid, None)
        return JSONResponse(protocol.completion(uid, model, chat, "".join(text), r.finish_reason, r.prompt_tokens,
                                                r.completion_tokens))

    async def _stream(uid: int, q: asyncio.Queue[Any], r: ReplyMsg, gen: Generation,
                      request: Request) -> AsyncIterator[bytes]:
        first, done = True, False
        try:
            while True:
                if r.error:
                    yield _sse(_reply_error(r).body())
                    break
                chunks = protocol.stream_chunks(uid, model, gen, r.text, r.finish_reason, r.prompt_tokens,
                                                r.completion_tokens, first)
                first = False
                done = r.finish_reason is not None  # finished by the scheduler: nothing to abort
                for c in chunks:
                    yield _sse(c)
                if done:
                    break
                nxt = await _next_reply(q, request)
                if nxt is None:
                    break
                r = nxt
            yield b"data: [DONE]\n\n"
        finally:  # runs when the client goes away mid-stream too (the generator is closed or cancelled)
            if not done:
                await fe.abort(uid)
            fe.queues.pop(uid, None)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await generate(request, chat=False)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        return await generate(request, chat=True)

    return app
