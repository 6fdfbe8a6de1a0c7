"""`python -m minisgl serve`: start the scheduler, the tokenizers and the detokenizer (spawned processes talking over
ZMQ in a private folder), then the API; stop them all on SIGINT or SIGTERM, or when one of them dies."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing as mp
import os
import queue
import shutil
import signal
import socket
import sys
import tempfile
import threading
from multiprocessing.connection import wait
from typing import Any

from minisgl.server.args import ServerArgs

logger = logging.getLogger("minisgl.server")
_STOP_S = 5.0  # a worker that has not stopped this long after SIGTERM is killed


class ServerError(Exception):
    pass


def _say(msg: str) -> None:
    print(f"minisgl serve: {msg}", file=sys.stderr, flush=True)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ServerError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(False)
    return sock


class Workers:
    """The worker processes, by name."""

    def __init__(self) -> None:
        self.ctx = mp.get_context("spawn")
        self.ready = self.ctx.Queue()
        self.procs: dict[str, Any] = {}

    def start(self, name: str, target: Any, *args: Any) -> None:
        p = self.ctx.Process(target=target, args=(*args, self.ready, os.getpid()), name=f"minisgl-{name}")
        p.start()
        self.procs[name] = p

    def wait_ready(self, names: list[str]) -> dict[str, Any]:
        """Each named worker's start-up info, once all are ready; ServerError if one fails or dies first."""
        left, infos = set(names), {}
        while left:
            try:
                name, pid, error, info = self.ready.get(timeout=0.5)
            except queue.Empty:
                for n, p in self.procs.items():
                    if not p.is_alive():
                        raise ServerError(f"the {n} process (pid {p.pid}) exited with code {p.exitcode} "
                                          "while starting") from None
                continue
            if error is not None:
                raise ServerError(f"the {name} process (pid {pid}) failed to start: {error}")
            left.discard(name)
            infos[name] = info
        return infos

    def first_death(self, stop: threading.Event) -> str | None:
        """Block until a worker exits (its name, pid and code) or `stop` is set (None)."""
        sentinels = {p.sentinel: n for n, p in self.procs.items()}
        while not stop.is_set():
            for s in wait(list(sentinels), timeout=0.5):
                if stop.is_set():  # stopping: the launcher ends them itself
                    return None
                n = sentinels[s]
                p = self.procs[n]
                p.join(0)
                return f"the {n} process (pid {p.pid}) died (exit code {p.exitcode})"
        return None

    def stop(self) -> None:
        for p in self.procs.values():
            if p.is_alive():
                p.terminate()
        for p in self.procs.values():
            p.join(_STOP_S)
            if p.is_alive():
                p.kill()
                p.join()
        self.ready.close()
        self.ready.join_thread()


def serve(args: ServerArgs) -> int:
    import uvicorn

    from minisgl.server.api import Frontend, create_app

    logging.basicConfig(level=os.environ.get("MINISGL_LOG_LEVEL", "WARNING").upper(),
                        format="[%(asctime)s %(name)s] %(levelname)s %(message)s", datefmt="%H:%M:%S")
    from minisgl.server import workers

    sock = _listen(args.host, args.port)
    port = sock.getsockname()[1]
    args.ipc_dir = tempfile.mkdtemp(prefix="minisgl-ipc-")
    pool = Workers()
    fe = Frontend(args)
    died: list[str] = []
    stopping = threading.Event()
    server: uvicorn.Server | None = None

    def on_signal(signum: int, _frame: Any) -> None:
        stopping.set()
        if server is not None:
            server.should_exit = True
        else:
            raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        _say(f"loading {args.model} ...")
        context = pool.ctx.Value("i", 0, lock=False)  # the context length, for the tokenizers, once known
        pool.start("scheduler", workers.scheduler_main, args)
        names = ["detokenizer"] + [f"tokenizer-{i}" for i in range(args.num_tokenizer)]
        for n in names:  # they load their tokenizer while the scheduler loads the model
            pool.start(n, workers.tokenizer_main, n, args, context)
        info = pool.wait_ready(["scheduler"])["scheduler"]
        context.value = info["max_seq_len"]
        pool.wait_ready(names)

        host = f"[{args.host}]" if ":" in args.host else args.host

        def on_ready() -> None:
            _say(f"serving {args.served_model_name} at http://{host}:{port} (context {info['max_seq_len']} tokens, "
                 f"{info['num_pages']} KV pages, {info['device']}); Ctrl-C stops")

        app = create_app(fe, on_ready)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                               timeout_graceful_shutdown=2))
        loop_holder: list[Any] = []

        def watch() -> None:
            why = pool.first_death(stopping)
            if why is None:
                return
            died.append(why)
            _say(f"{why}; stopping")
            try:
                loop_holder[0].call_soon_threadsafe(fe.fail_all, why)
            except (IndexError, RuntimeError):  # the API is not up yet, or already down
                pass
            server.should_exit = True

        watcher = threading.Thread(target=watch, name="minisgl-watch", daemon=True)

        async def run() -> None:
            loop_holder.append(asyncio.get_running_loop())
            watcher.start()
            await server.serve(sockets=[sock])

        asyncio.run(run())
    except ServerError as e:
        _say(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        pass
    finally:
        stopping.set()
        pool.stop()
        sock.close()
        shutil.rmtree(args.ipc_dir, ignore_errors=True)
        for s, h in old.items():
            signal.signal(s, h)
    if died:
        _say(f"stopped: {died[0]}")
        return 1
    _say("stopped")
    return 0
