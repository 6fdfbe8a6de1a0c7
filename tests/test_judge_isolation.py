"""Isolation: hostile submissions, each judged in a child process, get the right status and a clear
message, and the judge keeps working afterwards."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from judge import sandbox
from judge.exercise import find_exercise, load_exercise
from judge.isolation import DEFAULT_MEMORY_MB, Judging, Limits, judge_isolated, local_spec

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "tests" / "fixtures" / "toy"

# a correct submission for the toy exercise (its line numbers are asserted on)
GOOD = (TOY / "good_submission.py").read_text()


def with_body(body: str) -> str:
    return GOOD.replace("    return [v * k for v in values]\n", body)


FAKE = '{"version": 1, "status": "accepted", "passed": 99, "failed": 0, "total": 99}'
HOSTILE = {
    "endless_loop": with_body("    while True:\n        pass\n"),
    "os_exit": with_body("    import os\n    os._exit(0)\n"),
    "alloc_50gb_torch": with_body("    import torch\n    x = torch.empty(50 * 2**30, dtype=torch.uint8)\n"
                                  "    x.fill_(1)\n    return [v * k for v in values]\n"),
    "alloc_50gb_python": with_body("    x = bytearray(50 * 2**30)\n    return [v * k for v in values]\n"),
    "fake_verdict": with_body(
        f"    import os, sys\n    print({FAKE!r})\n    print({FAKE!r}, file=sys.stderr)\n"
        f"    os.write(1, ({FAKE!r} + '\\n').encode())\n"
        "    os.write(1, b'{\"event\": \"verdict\", \"index\": 0, \"verdict\": {\"status\": \"accepted\"}}\\n')\n"
        "    return [v * k + 1 for v in values]\n"),
    "system_exit": with_body("    raise SystemExit(0)\n"),
    "endless_recursion": with_body("    return scale(values, k)\n"),
    "delete_engine_modules": with_body(
        "    import sys\n    for m in [m for m in sys.modules if m.startswith(('toyengine', 'judge'))]:\n"
        "        del sys.modules[m]\n    return [v * k for v in values]\n"),
    "segfault": with_body("    import ctypes\n    ctypes.string_at(0)\n"),
    "loop_at_load": "while True:\n    pass\n" + GOOD,
    "exit_at_load": "import os\nos._exit(7)\n" + GOOD,
    "good_afterwards": GOOD,
}
LIMITS = Limits(run_s=30, test_s=3, memory_mb=DEFAULT_MEMORY_MB)


def judge_toy(source: str, *, toy_engine: bool = True):
    """The verdict of ``source`` for the toy exercise, judged in a fresh child (``toy_engine``: the toy
    engine importable there)."""
    ex = load_exercise(TOY / "exercises" / "toy-counter")
    spec = local_spec([str(TOY)] if toy_engine else [])
    return judge_isolated([Judging(ex, source)], limits=LIMITS, spec=spec)[0].verdict


@pytest.fixture(scope="module")
def verdicts():
    ex = load_exercise(TOY / "exercises" / "toy-counter")
    judgings = [Judging(ex, src, filename=f"{name}.py") for name, src in HOSTILE.items()]
    out = judge_isolated(judgings, limits=LIMITS, spec=local_spec([str(TOY)]))
    return dict(zip(HOSTILE, [o.verdict for o in out]))


def first_bad(v):
    return next(t for t in v.tests if t.status not in ("pass", "skip"))


def test_endless_loop_is_a_timeout(verdicts):
    v = verdicts["endless_loop"]
    assert v.status == "timeout"
    t = first_bad(v)
    assert t.name == "test_example_scale" and t.status == "timeout"
    assert "time limit of 3 s" in t.message
    assert all(t.status == "skip" for t in v.tests[1:]), "the rest did not run"
    assert v.ms < 15000


def test_os_exit_is_a_runtime_error(verdicts):
    v = verdicts["os_exit"]
    assert v.status == "runtime_error"
    assert "exited (exit code 0) before it could report a verdict" in first_bad(v).message


@pytest.mark.parametrize("name", ["alloc_50gb_torch", "alloc_50gb_python"])
def test_huge_allocation_hits_the_memory_limit(verdicts, name):
    v = verdicts[name]
    assert v.status == "runtime_error"
    msg = first_bad(v).message
    assert "Out of memory" in msg and f"{DEFAULT_MEMORY_MB} MiB" in msg


def test_printed_fake_verdict_has_no_effect(verdicts):
    v = verdicts["fake_verdict"]
    assert v.status == "wrong_answer"
    assert v.total == 5 and v.passed < 5
    assert FAKE in v.tests[0].output, "what the test printed is kept as its output, nothing more"


def test_system_exit_is_a_runtime_error(verdicts):
    v = verdicts["system_exit"]
    assert v.status == "runtime_error"
    assert "SystemExit(0)" in first_bad(v).message


def test_endless_recursion_is_a_runtime_error(verdicts):
    v = verdicts["endless_recursion"]
    assert v.status == "runtime_error"
    msg = first_bad(v).message
    assert "RecursionError" in msg and "endless_recursion.py" in msg


def test_deleting_engine_modules_does_not_break_the_judge(verdicts):
    v = verdicts["delete_engine_modules"]
    assert v.status in ("accepted", "runtime_error")
    assert v.total == 5 and v.status != "internal_error"


def test_segfault_is_a_runtime_error(verdicts):
    v = verdicts["segfault"]
    assert v.status == "runtime_error"
    assert "segmentation fault (SIGSEGV)" in first_bad(v).message


def test_loop_and_exit_while_loading(verdicts):
    v = verdicts["loop_at_load"]
    assert v.status == "timeout" and "module-level code ran past the time limit" in v.message
    v = verdicts["exit_at_load"]
    assert v.status == "runtime_error" and "exit code 7" in v.message


def test_the_judge_keeps_working(verdicts):
    v = verdicts["good_afterwards"]
    assert v.status == "accepted" and v.passed == 4


def test_real_engine_hostile_then_clean():
    """On a real exercise: an endless loop in copy_from, then deleting the engine's modules, then the
    reference: the last is accepted."""
    ex = find_exercise("graph-capture-buffer")
    ref_copy = (
        "class GraphCaptureBuffer:\n"
        "    def set_batch(self, batch):\n"
        "        s = slice(batch.padded_size)\n"
        "        batch.input_ids, batch.out_loc, batch.positions = self.input_ids[s], self.out_loc[s], "
        "self.positions[s]\n\n"
        "    def copy_from(self, batch):\n"
        "{pre}"
        "        s = slice(batch.padded_size)\n"
        "        self.input_ids[s] = batch.input_ids\n"
        "        self.out_loc[s] = batch.out_loc\n"
        "        self.positions[s] = batch.positions\n"
    )
    loop = ref_copy.replace("{pre}", "        while True:\n            pass\n")
    delete = ref_copy.replace("{pre}", "        import sys\n        for m in [m for m in sys.modules if "
                                       "m.startswith('minisgl')]:\n            del sys.modules[m]\n")
    judgings = [Judging(ex, loop, "loop.py", run_only=True), Judging(ex, delete, "delete.py"),
                Judging(ex, None, "reference.py")]
    v_loop, v_delete, v_ref = [o.verdict for o in judge_isolated(judgings, limits=Limits(run_s=60, test_s=3))]
    assert v_loop.status == "timeout"
    assert v_delete.status in ("accepted", "runtime_error") and v_delete.status != "internal_error"
    assert v_ref.status == "accepted"


def test_child_failure_before_learner_code_is_internal_error(tmp_path):
    """If the judge's child cannot even start the job, the verdict is ours, not the learner's."""
    # the toy engine cannot be imported, so the exercise is broken for this judge
    v = judge_toy(GOOD, toy_engine=False)
    assert v.status == "internal_error"
    assert "toyengine" in v.message


def test_verdicts_built_after_a_crash_match_the_schema(verdicts):
    import json

    import jsonschema

    schema = json.loads((ROOT / "judge" / "verdict.schema.json").read_text())
    for name, v in verdicts.items():
        data = json.loads(v.to_json())
        jsonschema.validate(data, schema)
        assert data["passed"] + data["failed"] + data["skipped"] == data["total"], name


# -- the local guarantees, each on its own --------------------------------------------------------


def _toy():
    return load_exercise(TOY / "exercises" / "toy-counter")


def test_working_dir_and_temporary_files_are_private_and_removed():
    """The judging's cwd and temporary folder are a fresh private folder (its own, inside its child's), not the
    repository, and are gone after."""
    src = with_body("    import os, tempfile\n"
                    "    open('here.txt', 'w').write('x')\n"
                    "    print('CWD', os.getcwd(), 'TMP', tempfile.gettempdir())\n"
                    "    return [v * k for v in values]\n")
    v = judge_toy(src)
    assert v.status == "accepted", v.message
    words = v.tests[0].output.split()
    cwd, tmp = words[words.index("CWD") + 1], words[words.index("TMP") + 1]
    assert cwd == tmp and Path(cwd).parent.name.startswith("judge-") and not cwd.startswith(str(ROOT))
    assert not Path(cwd).exists(), "the private folder is removed after the judging"


def test_a_judging_gets_a_fresh_private_folder_whatever_its_childs_folder_holds(tmp_path):
    """The names a judging's private folder could take are already there (files the judge keeps): each judging
    still gets a new folder of its own, and the folder's contents are as they were after."""
    from dataclasses import replace

    for n in range(3):
        (tmp_path / f"job-{n}").write_text("kept")
    src = with_body("    import os\n    print('CWD', os.getcwd())\n    return [v * k for v in values]\n")
    spec = replace(local_spec([str(TOY)]), workdir=str(tmp_path))
    out = judge_isolated([Judging(_toy(), src), Judging(_toy(), src)], limits=LIMITS, spec=spec)
    cwds = [o.verdict.tests[0].output.split()[1] for o in out]
    assert [o.verdict.status for o in out] == ["accepted", "accepted"], [o.verdict.message for o in out]
    assert len(set(cwds)) == 2 and all(Path(c).parent == tmp_path for c in cwds)
    assert all((tmp_path / f"job-{n}").read_text() == "kept" for n in range(3))
    assert not [p for p in tmp_path.iterdir() if p.is_dir()], "each judging's folder is removed after it"


def test_sitecustomize_and_python_variables_are_ignored(tmp_path, monkeypatch):
    """A sitecustomize.py on PYTHONPATH that would make every check pass never runs; PYTHONOPTIMIZE
    cannot strip the tests' asserts."""
    (tmp_path / "sitecustomize.py").write_text(
        "import builtins\nbuiltins.__judge_hijacked__ = True\n"
        "import judge.checks as c\nc.compare = lambda *a, **k: True\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PYTHONOPTIMIZE", "2")
    monkeypatch.setenv("PYTHONSTARTUP", str(tmp_path / "sitecustomize.py"))
    wrong = with_body("    import builtins\n    print('HIJACKED', hasattr(builtins, '__judge_hijacked__'))\n"
                      "    return [v * k + 1 for v in values]\n")
    v = judge_toy(wrong)
    assert v.status == "wrong_answer"
    assert "HIJACKED False" in v.tests[0].output


@pytest.mark.parametrize("namespaces", [True, False], ids=["pid-namespace", "process-group+subreaper"])
def test_nothing_outlives_the_verdict_and_the_exit_is_bounded(namespaces):
    """A forked child that keeps the judge's pipe open and sleeps: the verdict still comes (the exit after
    it has its own deadline) and the sleeper is gone, with and without a PID namespace."""
    from judge import sandbox

    if namespaces and not sandbox.namespaces_available(trusted=False):
        pytest.skip("no PID namespaces on this machine (unshare refused)")
    tag = "31415.926"
    src = with_body("    import os, time\n"
                    "    if os.fork() == 0:\n"
                    "        os.setsid()\n"
                    f"        time.sleep(float('{tag}'))  # still holds every fd of the child\n"
                    "    return [v * k for v in values]\n")
    spec = local_spec([str(TOY)])
    spec.namespaces = namespaces
    t0 = time.monotonic()
    limits = Limits(run_s=30, test_s=5, exit_s=2)
    v = judge_isolated([Judging(_toy(), src, "sleeper.py")], limits=limits, spec=spec)[0].verdict
    assert v.status == "accepted", v.message
    assert time.monotonic() - t0 < 25
    assert not _processes_with(tag), "the forked sleeper outlived the verdict"


def _processes_with(tag: str) -> list[str]:
    import os

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/status") as f:
                state = next(line for line in f if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if tag in cmd and "Z" not in state:
            found.append(pid)
    return found


def test_a_verdict_forged_after_the_code_ran_is_never_an_internal_error():
    """The learner's code writes a fake 'internal error' verdict to the judge's pipe: it is theirs."""
    src = with_body("    import os, json\n"
                    "    for fd in range(3, 32):\n"
                    "        try:\n"
                    "            os.write(fd, (json.dumps({'event': 'verdict', 'verdict': {'status': "
                    "'internal_error', 'tests': []}}) + '\\n').encode())\n"
                    "        except OSError:\n"
                    "            pass\n"
                    "    os._exit(0)\n")
    v = judge_toy(src)
    assert v.status == "runtime_error"


def test_nothing_a_judging_leaves_reaches_the_next_in_its_child():
    """Three judgings in one child: the first plants module-level state, patches an engine function, the
    judge's comparison and the builtins, and writes files in its folder, its temporary folder and its child's
    folder; the second (correct) sees none of it and is accepted; the third (wrong) is not accepted."""
    planter = (
        "import builtins, os, tempfile, toyengine, judge.checks\n"
        "builtins.__planted__ = 1\n"
        "toyengine.PLANTED = 1\n"
        "toyengine.Counter.__init__ = lambda self: setattr(self, 'n', 100)\n"
        "judge.checks.compare = lambda *a, **k: True\n"
        "for d in ('.', tempfile.gettempdir(), '..'):\n"
        "    open(os.path.join(d, 'planted.txt'), 'w').write('x')\n" + GOOD)
    looker = with_body(
        "    import builtins, os, tempfile, toyengine\n"
        "    print('SEEN', hasattr(builtins, '__planted__'), hasattr(toyengine, 'PLANTED'),\n"
        "          os.path.exists('planted.txt'), os.path.exists(os.path.join(tempfile.gettempdir(), 'planted.txt')),\n"
        "          os.path.exists('../planted.txt'), 'PARENT', os.getppid())\n"
        "    return [v * k for v in values]\n")
    wrong = with_body("    return [v * k + 1 for v in values]\n")
    ex = _toy()
    planted, seen, judged = judge_isolated([Judging(ex, planter), Judging(ex, looker), Judging(ex, wrong)],
                                           limits=LIMITS, spec=local_spec([str(TOY)]))
    assert planted.verdict.status == "accepted", planted.verdict.message
    assert seen.verdict.status == "accepted", [(t.name, t.message) for t in seen.verdict.tests]
    words = seen.verdict.tests[0].output.split()
    assert words[words.index("SEEN") + 1:words.index("PARENT")] == ["False"] * 5
    assert judged.verdict.status == "wrong_answer"
    assert all(o.reported for o in (planted, seen, judged)), "each verdict came from its judging, none was rebuilt"


# scans its own process's writable memory for a token of the form LEAK-<32 hex digits> whose sha256 is SECRET_SHA
MEMORY_SCAN = with_body(
    "    import hashlib, re\n"
    "    pattern, found = re.compile(rb'LEAK-([0-9a-f]{32})'), []\n"
    "    with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb', buffering=0) as mem:\n"
    "        for line in maps:\n"
    "            span, perms = line.split()[:2]\n"
    "            if not perms.startswith('rw'):\n"
    "                continue\n"
    "            lo, hi = (int(x, 16) for x in span.split('-'))\n"
    "            try:\n"
    "                mem.seek(lo)\n"
    "                data = mem.read(hi - lo)\n"
    "            except OSError:\n"
    "                continue\n"
    "            found += [m.group(1) for m in pattern.finditer(data)]\n"
    "    print('FOUND', sum(hashlib.sha256(f).hexdigest() == SECRET_SHA for f in found))\n"
    "    return [v * k for v in values]\n")


def test_a_judgings_source_is_not_in_the_memory_the_next_one_starts_from():
    """A warm child never reads a job's source (only the job's fork does): the next judging, a fork of the same
    child, finds no copy of the last one's source anywhere in its memory."""
    import hashlib
    import secrets

    secret = secrets.token_hex(16)
    sha = hashlib.sha256(secret.encode()).hexdigest()
    planter = GOOD + f"\n# a learner's solution, private to them: LEAK-{secret}\n"
    looker = f"SECRET_SHA = {sha!r}\n" + MEMORY_SCAN
    ex = _toy()
    _, seen = judge_isolated([Judging(ex, planter), Judging(ex, looker)], limits=LIMITS, spec=local_spec([str(TOY)]))
    assert seen.verdict.status == "accepted", [(t.name, t.message) for t in seen.verdict.tests]
    words = seen.verdict.tests[0].output.split()
    assert words[words.index("FOUND") + 1] == "0", "the last judging's source is in this judging's memory"
    alone = judge_isolated([Judging(ex, looker.replace("SECRET_SHA = ", f"# LEAK-{secret}\nSECRET_SHA = "))],
                           limits=LIMITS, spec=local_spec([str(TOY)]))[0].verdict
    words = alone.tests[0].output.split()
    assert int(words[words.index("FOUND") + 1]) >= 1, "the scan finds the token in its own source: it can see one"


def _parent_of(verdict) -> str:
    """The judging's parent process, as pid and start time (a pid alone repeats across PID namespaces)."""
    words = verdict.tests[0].output.split()
    return words[words.index("PARENT") + 1]


PPID = with_body("    import os\n    stat = open(f'/proc/{os.getppid()}/stat').read()\n"
                 "    print('PARENT', f\"{os.getppid()}:{stat[stat.rindex(')') + 2:].split()[19]}\")\n"
                 "    return [v * k for v in values]\n")


def test_a_warm_child_serves_the_next_call_and_a_dead_one_is_replaced():
    """Two calls with the same walls are judged by one kept child (the same parent of their forks); when
    that child dies between calls, the next call is judged by a fresh one, not failed."""
    ex, spec = _toy(), local_spec([str(TOY)])
    first = judge_isolated([Judging(ex, PPID)], limits=LIMITS, spec=spec)[0].verdict
    second = judge_isolated([Judging(ex, PPID)], limits=LIMITS, spec=spec)[0].verdict
    assert first.status == second.status == "accepted"
    warm = _parent_of(first)
    assert _parent_of(second) == warm, "the second call was judged by the child the first one left warm"
    from judge.isolation import _WARM

    for _, child in _WARM.kept:  # what a crash or an OOM kill of the idle child would do
        sandbox.kill_group(child.proc.pid)
    time.sleep(0.2)
    third = judge_isolated([Judging(ex, PPID)], limits=LIMITS, spec=spec)[0].verdict
    assert third.status == "accepted", third.message
    assert _parent_of(third) != warm


def test_without_forks_each_judging_has_a_child_of_its_own():
    """Where a child cannot fork (CUDA initialised: here forced by ``ChildSpec.fork``), it judges one job and
    retires: each judging has its own child, and what one plants is not seen by the next."""
    from dataclasses import replace

    ex = _toy()
    spec = replace(local_spec([str(TOY)]), fork=False)
    planter = "import toyengine\ntoyengine.PLANTED = 1\n" + GOOD
    looker = with_body("    import toyengine\n    print('SEEN', hasattr(toyengine, 'PLANTED'))\n"
                       "    return [v * k for v in values]\n")
    got = judge_isolated([Judging(ex, planter), Judging(ex, looker), Judging(ex, GOOD)], limits=LIMITS, spec=spec)
    assert [o.verdict.status for o in got] == ["accepted"] * 3 and all(o.reported for o in got)
    words = got[1].verdict.tests[0].output.split()
    assert words[words.index("SEEN") + 1] == "False"
