"""One judging, or one side of it: ``python -m runner.job IN_DIR OUT_DIR`` (in a job container, or a local
subprocess). ``IN_DIR/job.json`` says which (``role``), the exercise, the judge's ``mode``, ``run`` and the
``seed`` of the hidden inputs:

- ``reference`` (docker executor): the exercise's tests with the engine's own code, on this seed; writes
  ``OUT_DIR/outcome.json`` (its verdict and the observations of every check: the expected values). No
  learner code runs in this container.
- ``learner`` (docker executor): the submission (``IN_DIR/submission.py``) bound into the engine copy of
  ``IN_DIR/tree`` (the targets' bodies removed, the exercise's public files only; built by the runner with
  ``judge.trusted.prepare_learner_tree``); writes ``OUT_DIR/outcome.json`` (its observations). The runner,
  a process the learner's code never runs in, decides the verdict from both files
  (``judge.trusted.decide``).
- ``trusted`` (local executor): the whole trusted judging here (``judge.trusted.judge_trusted``: reference
  and learner processes with the judge's own sandbox where the kernel allows it); writes
  ``OUT_DIR/verdict.json``.

As the container's PID 1 it also makes sure nothing of the learner's outlives the judging or writes
after it: it cannot be signalled from inside (PID 1 ignores signals it does not handle) nor traced (it
is not dumpable), and before it writes its file it kills every other process in the container. The
file is written last, by the only process left, replacing whatever was there. Outside a container it
is a child subreaper and kills every descendant before it writes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

VERDICT = "verdict.json"  # role trusted: the verdict
OUTCOME = "outcome.json"  # roles reference and learner: one side's verdict and observations


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


def write_file(out_dir: Path, name: str, content: dict) -> None:
    path = out_dir / name
    tmp = out_dir / f".{name}.{os.getpid()}"
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
        json.dump(content, f, ensure_ascii=False)
    os.replace(tmp, path)


def _outcome_dict(outcome) -> dict:
    return {"verdict": outcome.verdict.to_dict(), "checks": outcome.checks, "reported": outcome.reported}


def judge_role(job: dict, in_dir: Path) -> tuple[str, dict]:
    """Run this container's side of the judging; (file name, content) of what to write to OUT_DIR."""
    from judge.exercise import find_exercise, load_exercise
    from judge.isolation import Job, Limits, local_spec, run_batch

    role, mode, run, seed = job["role"], job.get("mode", "local"), bool(job.get("run")), job.get("seed")
    if role == "trusted":
        from judge.trusted import judge_trusted

        source = (in_dir / "submission.py").read_text(encoding="utf-8")
        return VERDICT, judge_trusted(find_exercise(job["exercise"]), source, mode=mode, run_only=run,
                                      seed=seed).to_dict()
    if role == "reference":
        exercise = find_exercise(job["exercise"])
        ref = Job(exercise, None, "reference.py", mode, run, seed, role="reference")
        return OUTCOME, _outcome_dict(run_batch([ref], Limits.for_exercise(exercise, mode), local_spec())[0])
    if role == "learner":
        from judge.isolation import ChildSpec, _python_path

        tree = in_dir / "tree"
        ex_dir = tree / "exercises" / job["exercise"]
        exercise = load_exercise(ex_dir)
        scratch = Path(os.environ.get("HOME") or "/scratch") / "learner"
        scratch.mkdir(parents=True, exist_ok=True)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(scratch),
               "MINISGL_TEST_MODELS": os.environ.get("MINISGL_TEST_MODELS", ""),
               "MINISGL_EXERCISES": str(tree / "exercises")}
        for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
            if k in os.environ:
                env[k] = os.environ[k]
        spec = ChildSpec(sys_path=[str(tree / "code")] + _python_path(), env=env, workdir=str(scratch),
                         measures=list(job.get("measures", [])))
        source = (in_dir / "submission.py").read_text(encoding="utf-8")
        learner = Job(exercise, source, "submission.py", mode, run, seed, role="learner", exercise_path=str(ex_dir))
        return OUTCOME, _outcome_dict(run_batch([learner], Limits.for_exercise(exercise, mode), spec)[0])
    raise ValueError(f"unknown role {role!r}")


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
    job = json.loads((in_dir / "job.json").read_text(encoding="utf-8"))
    try:
        name, content = judge_role(job, in_dir)
    except Exception as e:  # noqa: BLE001 - ours, never the learner's (their code ran in a child)
        from judge.verdict import Verdict

        v = Verdict(status="internal_error", exercise=str(job.get("exercise", "")), mode=job.get("mode", "local"),
                    message=f"The runner could not judge this (not your fault): {type(e).__name__}: {e}").finalize()
        name, content = (VERDICT, v.to_dict()) if job.get("role") == "trusted" else \
            (OUTCOME, {"verdict": v.to_dict(), "checks": {}, "reported": False, "failed": True})
    if pid1:
        _kill_everything_else()
    else:
        _kill_descendants()
    write_file(out_dir, name, content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
