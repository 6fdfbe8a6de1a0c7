"""The worker processes' entry points (spawned by the launcher): the scheduler, tokenizers and the detokenizer.
Each tells the launcher it is ready (or why it failed) on the `ready` queue, and dies with the launcher."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import traceback
from typing import Any

from minisgl.server.args import ServerArgs

_PR_SET_PDEATHSIG = 1


def _become_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole terminal group: the launcher stops us
    if sys.platform == "linux":  # die with the launcher, even if it is killed
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)


def _fail(ready: Any, name: str, e: BaseException) -> None:
    traceback.print_exc()
    ready.put((name, os.getpid(), f"{type(e).__name__}: {e}", None))
    sys.exit(1)


def scheduler_main(args: ServerArgs, ready: Any, parent: int) -> None:
    _become_worker(parent)
    try:
        from minisgl.engine import Engine
        from minisgl.message.channel import Receiver, Sender
        from minisgl.scheduler import Scheduler
        from minisgl.scheduler.io import SchedulerIO

        engine = Engine(args.engine_config())
        io = SchedulerIO(Scheduler(engine), Receiver(args.addr("scheduler"), bind=True),
                         Sender(args.addr("detokenizer")))
    except Exception as e:
        _fail(ready, "scheduler", e)
    info = {"max_seq_len": engine.max_seq_len, "num_pages": engine.num_pages, "device": str(engine.device)}
    ready.put(("scheduler", os.getpid(), None, info))
    io.serve_forever()


def tokenizer_main(role: str, args: ServerArgs, max_seq_len: int, ready: Any, parent: int) -> None:
    """role: 'tokenizer' (one of --num-tokenizer) or 'detokenizer' (which tokenizes too without tokenizer workers)."""
    _become_worker(parent)
    try:
        from transformers import AutoTokenizer

        from minisgl.message.channel import Receiver, Sender
        from minisgl.tokenizer.server import TokenizerServer

        tokenizer = AutoTokenizer.from_pretrained(args.model)
        if role == "tokenizer":
            server = TokenizerServer(tokenizer, max_seq_len, Receiver(args.addr("tokenizer"), bind=False),
                                     Sender(args.addr("scheduler")), Sender(args.addr("detokenizer")), None)
        else:
            server = TokenizerServer(tokenizer, max_seq_len, Receiver(args.addr("detokenizer"), bind=True),
                                     Sender(args.addr("scheduler")), None, Sender(args.addr("api")))
    except Exception as e:
        _fail(ready, role, e)
    ready.put((role, os.getpid(), None, None))
    server.serve_forever()
