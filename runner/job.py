"""One judging, or one side of it: ``python -m runner.job IN_DIR OUT_DIR`` (in a job container, or a local
subprocess). ``IN_DIR/job.json`` says which (``role``), the exercise, the judge's ``mode``, ``run`` and the
``seed`` of the hidden inputs:

- ``reference`` (docker executor): the exercise's tests with the engine's own code, on this seed; writes
  ``OUT_DIR/outcome.json`` (its verdict and the observations of every check: the expected values). No
  learner code runs in this container.
- ``learner`` (docker executor): the submission (``IN_DIR/submission.py``) bound into the engine copy of
  ``IN_DIR/tree`` (the targets' bodies removed, the exercise's public files only; built by the runner with
  ``judge.trusted.prepare_learner_tree``); writes ``OUT_DIR/outcome.json`` (its observations). The runner,
  a process the learner's code never runs in, decides the verdict from both files (``judge.trusted.judge_trusted``
  with the docker executor's sides).
- ``trusted`` (local executor): the whole trusted judging here (``judge.trusted.judge_trusted``: reference
  and learner processes with the judge's own sandbox where the kernel allows it); writes
  ``OUT_DIR/verdict.json``. The local executor sends its jobs to ``python -m runner.job --serve``, one
  process per slot that judges them one after the other (``serve``), its reference and learner processes kept
  warm between them.

As the container's PID 1 it also makes sure nothing of the learner's outlives the judging or writes
after it: it cannot be signalled from inside (PID 1 ignores signals it does not handle) nor traced (it
is not dumpable), and before it writes its file it kills every other process in the container. The
file is written last, by the only process left, replacing whatever was there. Outside a container it
is a child subreaper and kills every descendant before it writes. Both ways of ending processes, and the
learner's environment, are the judge's process control (``judge.sandbox``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from judge import sandbox

VERDICT = "verdict.json"  # role trusted: the verdict
OUTCOME = "outcome.json"  # roles reference and learner: one side's verdict and observations


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
    from judge.isolation import ChildSpec, Judging, judge_isolated

    role, mode, run, seed = job["role"], job.get("mode", "local"), bool(job.get("run")), job.get("seed")
    if role == "trusted":
        from judge.trusted import judge_trusted

        source = (in_dir / "submission.py").read_text(encoding="utf-8")
        judging = Judging(find_exercise(job["exercise"]), source, "submission.py", mode, run, seed)
        return VERDICT, judge_trusted([judging])[0].to_dict()
    if role == "reference":
        ref = Judging(find_exercise(job["exercise"]), None, "reference.py", mode, run, seed, role="reference")
        return OUTCOME, _outcome_dict(judge_isolated([ref])[0])
    if role == "learner":
        tree = in_dir / "tree"
        ex_dir = tree / "exercises" / job["exercise"]
        exercise = load_exercise(ex_dir)
        scratch = Path(os.environ.get("HOME") or "/scratch") / "learner"
        scratch.mkdir(parents=True, exist_ok=True)
        env = sandbox.learner_env(str(scratch), str(tree / "exercises"), os.environ.get("MINISGL_TEST_MODELS", ""))
        spec = ChildSpec(sys_path=[str(tree / "code")] + sandbox.python_path(), env=env, workdir=str(scratch),
                         measures=list(job.get("measures", [])))
        source = (in_dir / "submission.py").read_text(encoding="utf-8")
        learner = Judging(exercise, source, "submission.py", mode, run, seed, role="learner", exercise_path=str(ex_dir))
        return OUTCOME, _outcome_dict(judge_isolated([learner], spec=spec)[0])
    raise ValueError(f"unknown role {role!r}")


def judge_one(in_dir: Path, out_dir: Path, *, pid1: bool = False, warm: bool = False) -> None:
    """Judge the job in ``in_dir`` and write its file to ``out_dir``, last, once every process it started
    (but, with ``warm``, the warm children kept for the next job) is gone."""
    job: dict = {}
    try:
        job = json.loads((in_dir / "job.json").read_text(encoding="utf-8"))
        name, content = judge_role(job, in_dir)
    except Exception as e:  # noqa: BLE001 - ours, never the learner's (their code ran in a child)
        from judge.verdict import Verdict

        v = Verdict.failure("internal_error", f"The runner could not judge this (not your fault): {type(e).__name__}: "
                            f"{e}", exercise=str(job.get("exercise", "")), mode=job.get("mode", "local"))
        name, content = (VERDICT, v.to_dict()) if job.get("role") == "trusted" else \
            (OUTCOME, {"verdict": v.to_dict(), "checks": {}, "reported": False, "failed": True})
    if pid1:
        sandbox.kill_all_others()
    else:
        from judge.isolation import kept_children

        sandbox.kill_descendants(spare=kept_children() if warm else frozenset())
    write_file(out_dir, name, content)


def serve() -> int:
    """The local executor's warm judge: ``python -m runner.job --serve`` judges one job per line of stdin
    (``IN_DIR OUT_DIR``, tab-separated) and answers each with a line ``done`` on stdout once its file is written.
    Torch and the engine are imported once, by the warm children kept between jobs (``judge.isolation``: each
    judging runs in a fork of one, and sees nothing of the jobs before it); everything else a job started is
    killed before its file is written. Ends at the end of stdin (the runner went away)."""
    sandbox.become_subreaper()
    for line in sys.stdin:
        in_dir, _, out_dir = line.rstrip("\n").partition("\t")
        judge_one(Path(in_dir), Path(out_dir), warm=True)
        print("done", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--serve"]:
        return serve()
    if len(args) != 2:
        print("usage: python -m runner.job IN_DIR OUT_DIR  |  python -m runner.job --serve", file=sys.stderr)
        return 2
    in_dir, out_dir = Path(args[0]), Path(args[1])
    pid1 = os.getpid() == 1
    if pid1:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # PID 1: default-action signals from inside are dropped
        sandbox.not_dumpable()
    else:
        sandbox.become_subreaper()
    judge_one(in_dir, out_dir, pid1=pid1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
