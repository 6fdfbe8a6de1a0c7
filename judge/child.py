"""The child process of an isolated judging (started by ``judge.isolation``, never by hand).

Started as ``python -I -S -c BOOT CONFIG``: isolated from the environment (``PYTHON*`` variables,
``sitecustomize``, the user's site folder and the current directory are ignored), with ``sys.path``
given by the parent. First thing, before any of the learner's code, it builds its walls: the sandbox
where asked (``judge.sandbox.enter``), then its resource limits. Then it reads jobs from a pipe, one JSON
line at a time (the next one only after the verdict of the last: a job never sees another's source),
judges each with the in-process core and reports events and verdicts as JSON lines over the pipe the
parent gave it. Its stdout and stderr (where the learner's stray prints end up) go to a file the parent
never parses, so nothing printed can forge a verdict.

A job that leaves something behind (a thread, a child process) ends this process after its verdict,
so that nothing it left can touch the next job.
"""

from __future__ import annotations

import json
import os
import sys

BOOT = "import json, sys; c = json.loads(sys.argv[1]); sys.path[:0] = c['sys_path']; " \
       "from judge.child import main; main(c)"


def main(config: dict) -> None:
    channel = os.fdopen(int(config["fd"]), "wb", buffering=0)
    jobs = os.fdopen(int(config["jobs_fd"]), "rb")
    os.set_inheritable(channel.fileno(), False)
    os.set_inheritable(jobs.fileno(), False)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the learner's code reads nothing
    write, dumps = channel.write, json.JSONEncoder(ensure_ascii=True).encode  # bound before any learner code

    def send(obj: dict) -> None:
        write((dumps(obj) + "\n").encode())

    code = 0
    try:
        from . import sandbox

        walls = config.get("sandbox")
        if walls:
            sandbox.enter(walls["writable"], walls["hide"], walls["keep"])
        sandbox.set_limits(config.get("memory_mb"), int(config.get("fsize_mb", 64)), config.get("nproc"))
        sandbox.become_subreaper()
        from .exercise import load_exercise
        from .harness import environment, judge_source
        from .solution import reference_source

        environment()  # import torch before the clock of the first job matters
        import gc
        import threading

        gc.freeze()  # what is loaded now lives as long as we do: the collection after each job skips it

        threads = threading.active_count()
    except BaseException as e:  # noqa: BLE001 - ours: nothing of the learner's ran yet
        send({"event": "fatal", "message": f"the judge could not start: {type(e).__name__}: {e}"})
        _exit(3)
    send({"event": "ready"})

    for line in jobs:  # one job per line, sent after the previous verdict
        try:
            job = json.loads(line)
            exercise = load_exercise(job["exercise"])
            source = job.get("source")
            if source is None:
                source = reference_source(exercise)
            verdict = judge_source(
                exercise, source, filename=job.get("filename") or "submission.py", mode=job.get("mode", "local"),
                run_only=bool(job.get("run_only")), on_event=send, memory_limit_mb=config.get("memory_mb"),
                seed=job.get("seed"), role=job.get("role", "judge"),
            )
            del source, job
            left = threading.active_count() > threads or bool(sandbox.children(os.getpid()))
            if left:
                sandbox.kill_descendants()
            send({"event": "verdict", "verdict": verdict.to_dict(), "retire": left})
            if left:
                break
        except BaseException as e:  # noqa: BLE001 - ours (the core itself never raises)
            send({"event": "fatal", "message": f"{type(e).__name__}: {e}"})
            code = 3
            break
    _exit(code)


def _exit(code: int) -> None:
    from .sandbox import kill_descendants

    kill_descendants()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # do not wait for threads the learner may have left running


if __name__ == "__main__":
    sys.exit("judge.child is started by judge.isolation (python practice/judge.py test ...), not by hand")
