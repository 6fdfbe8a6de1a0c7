"""The local executor's warm judge (``runner.job --serve``): a slot's jobs are judged one after the other by one
process that keeps torch and the engine imported, in trusted mode as before; a job past its wall time, or
cancelled, ends that process and everything it started, and the next job is judged by a fresh one."""

from __future__ import annotations

import os
import threading
import time

import pytest

from judge.sandbox import descendants, running
from runner.executors import LocalExecutor, Slot
from tests.server.pieces import mutant_code, reference_code

EX = "sampling-params-validate"
SLOT = Slot("cpu0")


def job(code: str, exercise: str = EX) -> dict:
    return {"id": 1, "exercise": exercise, "code": code, "mode": "cpu", "run": False}


@pytest.fixture
def executor(tmp_path):
    ex = LocalExecutor(work_dir=str(tmp_path / "work"))
    ex.prepare()
    yield ex
    ex.close()


def the_judge(executor: LocalExecutor):
    (judge,) = executor._judges.values()
    return judge


def test_a_slots_jobs_share_one_warm_judge_and_keep_their_verdicts(executor):
    never = threading.Event()
    first = executor.judge(job(reference_code(EX)), SLOT, never)
    judge = the_judge(executor)
    t0 = time.monotonic()
    wrong = executor.judge(job(mutant_code(EX, sorted(os.listdir(f"exercises/{EX}/mutants"))[0][:-3])), SLOT, never)
    warm = time.monotonic() - t0
    again = executor.judge(job(reference_code(EX)), SLOT, never)
    assert first.verdict["status"] == again.verdict["status"] == "accepted", first.verdict["message"]
    assert wrong.verdict["status"] == "wrong_answer", wrong.verdict["message"]
    for r in (first, wrong, again):
        assert r.verdict["trust"]["level"] == "trusted" and not r.handback
    assert the_judge(executor) is judge and judge.alive(), "the slot's later jobs were judged by the same process"
    assert descendants(judge.proc.pid), "it keeps its warm children between jobs"
    assert warm < 20, f"a warm trusted judging took {warm:.1f} s"


LOOP = "def validate(self) -> None:\n        while True:\n            pass\n"


def looping() -> str:
    code = reference_code(EX).replace("def validate(self) -> None:\n", LOOP, 1)
    assert code != reference_code(EX)
    return code


def test_a_job_past_its_wall_time_ends_the_judge_and_all_it_started(executor, monkeypatch):
    never = threading.Event()
    assert executor.judge(job(reference_code(EX)), SLOT, never).verdict["status"] == "accepted"
    judge = the_judge(executor)
    tree = [judge.proc.pid, *descendants(judge.proc.pid)]
    assert len(tree) > 1, "its warm children"
    limits = executor.limits

    def short(j, s):
        lim = limits(j, s)
        lim.wall_s = 4.0  # less than the exercise's own test limit: the wall cuts the judging, not the judge
        return lim

    monkeypatch.setattr(executor, "limits", short)
    cut = executor.judge(job(looping()), SLOT, never)
    assert cut.verdict["status"] == "timeout", cut.verdict
    assert not any(running(p) for p in tree), "the judge and everything it started are gone"
    monkeypatch.setattr(executor, "limits", limits)
    after = executor.judge(job(reference_code(EX)), SLOT, never)
    assert after.verdict["status"] == "accepted"
    assert the_judge(executor) is not judge and the_judge(executor).alive()


def test_a_cancelled_job_is_handed_back_and_its_judge_ended(executor):
    cancel = threading.Event()
    assert executor.judge(job(reference_code(EX)), SLOT, cancel).verdict["status"] == "accepted"
    judge = the_judge(executor)
    tree = [judge.proc.pid, *descendants(judge.proc.pid)]
    threading.Timer(1.0, cancel.set).start()
    out = executor.judge(job(looping()), SLOT, cancel)
    assert out.handback and out.reason == "cancelled" and out.verdict is None
    assert not any(running(p) for p in tree)


def test_closing_the_executor_ends_every_judge(tmp_path):
    ex = LocalExecutor(work_dir=str(tmp_path / "work"))
    ex.prepare()
    assert ex.judge(job(reference_code(EX)), SLOT, threading.Event()).verdict["status"] == "accepted"
    judge = the_judge(ex)
    tree = [judge.proc.pid, *descendants(judge.proc.pid)]
    ex.close()
    assert not ex._judges and not any(running(p) for p in tree)
