"""The child process of an isolated judging (started by ``judge.isolation``, never by hand).

Started as ``python -I -S -c BOOT CONFIG``: isolated from the environment (``PYTHON*`` variables,
``sitecustomize``, the user's site folder and the current directory are ignored), with ``sys.path``
given by the parent. First thing, before any of the learner's code, it builds its walls: the sandbox
where asked (``judge.sandbox.enter``), then its resource limits. Then it imports torch, the engine and the
judge once, and reads jobs from a pipe: a JSON line (the job without its source), then the source's bytes, which
only the job's fork reads (the next job only after the last one's fork has ended: neither a job's source nor
anything of it ever is in this process's memory, so no later fork can find it there).

Each job is judged in a fork of this process, made for it and ended after its verdict: nothing a judging
does to memory (a module's state, a patched engine function, the builtins), to the processes (a thread,
a child left running: killed here after the fork ends) or to the files (its own working folder and
temporary folder, removed after it) reaches the next one, and none of it pays for the imports again. Its
events carry the job's token, which the next job's fork is the first to see, so nothing a judging writes
on the channel can pass for the next one's. Where CUDA is initialised (a fork cannot use it) the job runs
in this process, which then retires: one job per child.

Events and verdicts are JSON lines over the pipe the parent gave it; stdout and stderr (where the
learner's stray prints end up) go to a file the parent never parses, so nothing printed can forge a
verdict.
"""

from __future__ import annotations

import itertools
import json
import os
import sys

BOOT = "import json, sys; c = json.loads(sys.argv[1]); sys.path[:0] = c['sys_path']; " \
       "from judge.child import main; main(c)"


def main(config: dict) -> None:
    channel = os.fdopen(int(config["fd"]), "wb", buffering=0)
    jobs = int(config["jobs_fd"])  # read unbuffered: a buffer would hold the source that follows a job's line
    os.set_inheritable(channel.fileno(), False)
    os.set_inheritable(jobs, False)
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
        from . import solution  # noqa: F401 - loaded here, once, not in each job's fork
        from .harness import environment  # and with it the whole core (judge.exercise included)

        env = environment()  # import torch before the clock of the first job matters
        forking = env.device != "cuda" and config.get("fork", True)  # a fork cannot use the CUDA we initialised
        if forking:
            sandbox.not_dumpable()  # a judging (our fork) can neither ptrace us nor read our memory
        import gc

        gc.freeze()  # what is loaded now lives as long as we do: no fork's collection walks it
    except BaseException as e:  # noqa: BLE001 - ours: nothing of the learner's ran yet
        send({"event": "fatal", "message": f"the judge could not start: {type(e).__name__}: {e}"})
        _exit(3)
    send({"event": "ready"})
    workdir = os.getcwd()
    kept = set(os.listdir(workdir))  # what the parent put there (the log): everything else is a job's

    for n in itertools.count():  # one job at a time, sent after the previous one's fork has ended
        line = _read_line(jobs)
        if not line:
            break
        try:
            job = json.loads(line)
            size = int(job.pop("source_bytes"))
        except (ValueError, KeyError, TypeError) as e:
            send({"event": "fatal", "message": f"a job the judge could not read: {e}"})
            code = 3
            break
        token = str(job.get("token", ""))
        if not forking:
            job["source"] = _read_source(jobs, size)
            _judge(job, token, send, config.get("memory_mb"), retire=True)
            break

        def judging(job=job, token=token, n=n, size=size) -> None:
            """In the judging's own process: ends after its verdict, whatever the learner's code did."""
            import tempfile

            try:
                job["source"] = _read_source(jobs, size)
                os.close(jobs)  # the next job's line (its token, its source) is never readable from here
                private = tempfile.mkdtemp(prefix=f"job-{n}-", dir=workdir)  # 0o700, a name nothing took yet
                os.chdir(private)
                os.environ["TMPDIR"] = tempfile.tempdir = private
            except BaseException as e:  # noqa: BLE001 - ours, before any of the learner's code: say what
                send({"event": "fatal", "token": token, "message": f"the judging's private folder: "
                      f"{type(e).__name__}: {e}"})
                raise
            _judge(job, token, send, config.get("memory_mb"), retire=False)

        try:  # the exercise's tests compiled and its engine modules imported here, once: every fork finds them
            from .exercise import load_exercise
            from .harness import prepare

            prepare(load_exercise(job["exercise"]))
        except Exception:  # noqa: BLE001 - the judging says what is wrong with the exercise
            pass
        gc.freeze()  # and what prepare loaded: a judging's collection (harness.judge_source) walks only its own objects
        rc = sandbox.run_in_fork(judging)
        sandbox.kill_descendants()  # what the judging left running (its orphans are re-parented to us)
        _remove_all_but(workdir, kept)
        send({"event": "ended", "token": token, "rc": rc})
    _exit(code)


def _judge(job: dict, token: str, send, memory_mb: int | None, retire: bool) -> None:
    """Judge one job in this process and send its events (each with the job's token) and its verdict."""
    from .exercise import load_exercise
    from .harness import judge_source
    from .solution import reference_source

    def event(obj: dict) -> None:
        obj["token"] = token
        send(obj)

    try:
        exercise = load_exercise(job["exercise"])
        source = job.get("source")
        if source is None:
            source = reference_source(exercise)
        verdict = judge_source(
            exercise, source, filename=job.get("filename") or "submission.py", mode=job.get("mode", "local"),
            run_only=bool(job.get("run_only")), on_event=event, memory_limit_mb=memory_mb,
            seed=job.get("seed"), role=job.get("role", "judge"), first_failure=bool(job.get("first_failure")),
        )
        del source, job
        event({"event": "verdict", "verdict": verdict.to_dict(), "retire": retire})
    except BaseException as e:  # noqa: BLE001 - ours (the core itself never raises)
        event({"event": "fatal", "message": f"{type(e).__name__}: {e}"})


def _read_line(fd: int, cap: int = 1 << 16) -> bytes:
    """One line from ``fd``, a byte at a time (nothing after it is read); b"" at the end of the pipe."""
    out = bytearray()
    while len(out) < cap:
        b = os.read(fd, 1)
        if not b:
            return b""
        if b == b"\n":
            return bytes(out)
        out += b
    return bytes(out)


def _read_source(fd: int, size: int) -> str | None:
    """The ``size`` bytes of a job's source that follow its line (-1: none, the reference's)."""
    if size < 0:
        return None
    chunks, left = [], size
    while left > 0:
        b = os.read(fd, min(left, 1 << 20))
        if not b:
            raise EOFError(f"the job's source ended after {size - left} of {size} bytes")
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks).decode("utf-8")


def _remove_all_but(folder: str, kept: set[str]) -> None:
    """Remove from ``folder`` every entry not in ``kept`` (what a judging wrote there)."""
    import shutil

    for name in os.listdir(folder):
        if name not in kept:
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass


def _exit(code: int) -> None:
    from .sandbox import kill_descendants

    kill_descendants()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # do not wait for threads the learner may have left running


if __name__ == "__main__":
    sys.exit("judge.child is started by judge.isolation (python practice/judge.py test ...), not by hand")
