"""The worker processes' entry points (spawned by the launcher): the scheduler, tokenizers and the detokenizer.
Each tells the launcher it is ready (or why it failed) on the `ready` queue, and dies with the launcher."""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any

from minisgl.server.args import ServerArgs
from minisgl.utils.process import become_worker


def _fail(ready: Any, name: str, e: BaseException) -> None:
    traceback.print_exc()
    ready.put((name, os.getpid(), f"{type(e).__name__}: {e}", None))
    sys.exit(1)


def scheduler_main(args: ServerArgs, ready: Any, parent: int) -> None:
    become_worker("scheduler", parent)
    try:
        from minisgl.engine import Engine
        from minisgl.message.channel import Receiver, Sender
        from minisgl.scheduler import Scheduler
        from minisgl.scheduler.io import SchedulerIO

        config = args.engine_config()
        ranks = None
        if args.tp_size != 1:  # this process is rank 0; the others follow its steps
            from minisgl.distributed import check_tp_size
            from minisgl.distributed.ranks import RankGroup
            from minisgl.models import ModelConfig

            check_tp_size(ModelConfig.from_path(args.model), args.tp_size)
            ranks = RankGroup(config, args.tp_size, role="serve")
        engine = Engine(config)
        io = SchedulerIO(Scheduler(engine), Receiver(args.addr("scheduler"), bind=True),
                         Sender(args.addr("detokenizer")), mirror=ranks.submit if ranks is not None else None)
    except Exception as e:
        _fail(ready, "scheduler", e)
    info = {"max_seq_len": engine.max_seq_len, "num_pages": engine.num_pages, "device": str(engine.device)}
    ready.put(("scheduler", os.getpid(), None, info))
    try:
        io.serve_forever()
    except Exception as e:
        if ranks is None:
            raise
        print(f"minisgl serve: {ranks.failed(e)}", file=sys.stderr, flush=True)  # names the rank that died
        sys.exit(1)


def load_tokenizer(path: str) -> Any:
    """The model's tokenizer: its tokenizer.json through PreTrainedTokenizerFast (what AutoTokenizer picks for one,
    without importing every model's configuration: seconds at start-up), else AutoTokenizer."""
    from pathlib import Path

    if (Path(path) / "tokenizer.json").is_file():
        from transformers import PreTrainedTokenizerFast

        return PreTrainedTokenizerFast.from_pretrained(path)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def tokenizer_main(name: str, args: ServerArgs, context: Any, ready: Any, parent: int) -> None:
    """name: 'tokenizer-<i>' (one of --num-tokenizer) or 'detokenizer' (which tokenizes too without tokenizers).
    Started beside the scheduler: `context` (a shared int) holds the engine's context length once it is known."""
    become_worker(name.replace("-", ""), parent)
    role = name.split("-")[0]
    try:
        from minisgl.message.channel import Receiver, Sender
        from minisgl.tokenizer.server import TokenizerServer

        tokenizer = load_tokenizer(args.model)
        while context.value == 0:  # the scheduler is still loading the model
            time.sleep(0.05)
        max_seq_len = context.value
        if role == "tokenizer":
            server = TokenizerServer(tokenizer, max_seq_len, Receiver(args.addr("tokenizer"), bind=False),
                                     Sender(args.addr("scheduler")), Sender(args.addr("detokenizer")), None)
        else:
            server = TokenizerServer(tokenizer, max_seq_len, Receiver(args.addr("detokenizer"), bind=True),
                                     Sender(args.addr("scheduler")), None, Sender(args.addr("api")))
    except Exception as e:
        _fail(ready, name, e)
    ready.put((name, os.getpid(), None, None))
    server.serve_forever()
