"""The child process of an isolated judging: ``python -m judge.child --fd N [--memory-mb M]``.

It reads one request (JSON) from stdin, sets its own limits before anything of the learner's runs,
judges each job with the in-process core, and reports events and verdicts as JSON lines over the
pipe ``N`` that the parent gave it. Its stdout and stderr (where the learner's stray prints end up)
go to a file the parent never parses, so nothing printed can forge a verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _set_limits(memory_mb: int | None, fsize_mb: int) -> None:
    try:
        import resource
        import signal

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if memory_mb:
            b = memory_mb * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
        b = fsize_mb * 2**20
        resource.setrlimit(resource.RLIMIT_FSIZE, (b, b))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails instead of killing us
    except (ImportError, ValueError, OSError):  # not on Linux: the parent's wall clock still holds
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m judge.child")
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--memory-mb", type=int, default=0)
    ap.add_argument("--fsize-mb", type=int, default=64)
    args = ap.parse_args(argv)

    channel = os.fdopen(args.fd, "wb", buffering=0)
    os.set_inheritable(args.fd, False)

    def send(obj: dict) -> None:
        channel.write((json.dumps(obj, ensure_ascii=True) + "\n").encode())

    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the learner's code reads nothing
    _set_limits(args.memory_mb or None, args.fsize_mb)
    for p in reversed(request.get("sys_path", [])):
        if p not in sys.path:
            sys.path.insert(0, p)

    try:
        from .binding import reference_source
        from .exercise import load_exercise
        from .harness import environment, judge_source

        if request.get("preimport", True):
            environment()  # import torch before the clock of the first job matters
    except BaseException as e:  # noqa: BLE001
        send({"event": "fatal", "message": f"the judge could not start: {type(e).__name__}: {e}"})
        return 3
    send({"event": "ready"})

    for index, job in enumerate(request["jobs"]):
        send({"event": "job", "index": index})
        try:
            exercise = load_exercise(job["exercise"])
            source = job.get("source")
            if source is None:
                source = reference_source(exercise)
            send({"event": "load"})
            verdict = judge_source(
                exercise,
                source,
                filename=job.get("filename") or "submission.py",
                mode=job.get("mode", "local"),
                run_only=bool(job.get("run_only")),
                on_event=send,
                memory_limit_mb=args.memory_mb or None,
                seed=job.get("seed"),
            )
            send({"event": "verdict", "index": index, "verdict": verdict.to_dict()})
        except BaseException as e:  # noqa: BLE001 - ours (the core itself never raises)
            send({"event": "fatal", "message": f"{type(e).__name__}: {e}"})
            return 3
    channel.close()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # do not wait for threads the learner may have left running
