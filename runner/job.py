"""One judging, inside the job container (or a local subprocess): ``python -m runner.job IN_DIR OUT_DIR``.

Reads ``IN_DIR/job.json`` (``exercise``, ``mode``: the judge's mode, ``run``) and ``IN_DIR/submission.py``,
judges with the judge's isolated child (the learner's code runs in a child process; its stdout goes to a
file nobody parses), and writes the verdict to ``OUT_DIR/verdict.json``.

As the container's PID 1 it also makes sure nothing of the learner's outlives the judging or writes
after it: it cannot be signalled from inside (PID 1 ignores signals it does not handle) nor traced (it
is not dumpable), and before it writes the verdict it kills every other process in the container. The
verdict file is written last, by the only process left, replacing whatever was there. Outside a
container (the local executor) it is a child subreaper and kills every descendant before it writes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

VERDICT = "verdict.json"


def _not_dumpable() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no ptrace, no /proc/1/mem
    except (OSError, AttributeError):
        pass


def _kill_everything_else(timeout_s: float = 10.0) -> int:
    """As PID 1 of the container: SIGKILL every other process (kill(-1) spares only us), reap them."""
    deadline = time.monotonic() + timeout_s
    rounds = 0
    while time.monotonic() < deadline:
        rounds += 1
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid == 0:
                break
        others = [p for p in os.listdir("/proc") if p.isdigit() and p != "1"]
        if not others:
            break
        time.sleep(0.01)
    return rounds


def _become_subreaper() -> None:
    """Outside a container: orphans of the judging (a daemon that double-forked) are re-parented to us."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _children(pid: int) -> list[int]:
    kids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(p))
    return kids


def _kill_descendants(timeout_s: float = 10.0) -> None:
    """As a subreaper: SIGKILL our children until none is left (their orphans come to us in turn)."""
    me = os.getpid()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        kids = _children(me)
        if not kids:
            return
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for _ in kids:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break


def write_verdict(out_dir: Path, verdict: dict) -> None:
    path = out_dir / VERDICT
    tmp = out_dir / f".{VERDICT}.{os.getpid()}"
    for p in (tmp, path):
        try:
            if p.is_dir() and not p.is_symlink():
                import shutil

                shutil.rmtree(p)
            else:
                p.unlink()
        except FileNotFoundError:
            pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(verdict, f, ensure_ascii=False)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m runner.job IN_DIR OUT_DIR", file=sys.stderr)
        return 2
    in_dir, out_dir = Path(args[0]), Path(args[1])
    pid1 = os.getpid() == 1
    if pid1:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # PID 1: default-action signals from inside are dropped
        _not_dumpable()
    else:
        _become_subreaper()

    from judge.exercise import find_exercise
    from judge.isolation import judge_isolated
    from judge.verdict import Verdict

    job = json.loads((in_dir / "job.json").read_text(encoding="utf-8"))
    source = (in_dir / "submission.py").read_text(encoding="utf-8")
    mode = job.get("mode", "local")
    try:
        exercise = find_exercise(job["exercise"])
        verdict = judge_isolated(exercise, source, mode=mode, run_only=bool(job.get("run", False))).to_dict()
    except Exception as e:  # noqa: BLE001 - ours, never the learner's (their code ran in the child)
        verdict = Verdict(status="internal_error", exercise=str(job.get("exercise", "")), mode=mode,
                          message=f"The runner could not judge this (not your fault): {type(e).__name__}: {e}"
                          ).finalize().to_dict()
    if pid1:
        _kill_everything_else()
    else:
        _kill_descendants()
    write_verdict(out_dir, verdict)
    return 0


if __name__ == "__main__":
    sys.exit(main())
