"""The docker executor against a real Docker daemon.

1. The sandbox layer (``runner.containers.DockerSandbox.run_container``) with plain argv in the CPU job image:
   the container's confinement, its limits, the wall-clock kill, the results read from ``/out`` only.
2. Hostile submissions judged by a real runner process (docker executor) for a real site: each gets the
   right status, nothing leaks, nothing is left running, and a correct submission judged next is accepted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from runner.containers import LABEL, ContainerLimits, DockerSandbox
from tests.server.pieces import wait_for

PY = ["python", "-c"]


@pytest.fixture
def sandbox(job_image, tmp_path):
    sb = DockerSandbox(job_image, tmp_path / "jobs", owner="pytest-sandbox")
    yield sb
    assert sb.client.containers.list(all=True, filters={"label": f"{LABEL}=pytest-sandbox"}) == [], \
        "a container was left behind"


def _job_user_processes(client, owner: str) -> list[int]:
    """PIDs of the job user (uid 10001) on the host, except those inside a live container of another owner (a test
    in the other xdist worker may be judging in Docker right now)."""
    others = {c.id for c in client.containers.list(filters={"label": LABEL}) if c.labels.get(LABEL) != owner}
    ps = subprocess.run(["ps", "-u", "10001", "-o", "pid="], capture_output=True, text=True).stdout.split()
    mine = []
    for pid in map(int, ps):
        try:
            ids = set(re.findall(r"[0-9a-f]{64}", Path(f"/proc/{pid}/cgroup").read_text()))
        except OSError:  # it ended in between
            continue
        if not ids & others:
            mine.append(pid)
    return mine


def _run(sandbox, code: str, limits: ContainerLimits | None = None, files=None, cancel=None):
    return sandbox.run_container(PY + [code], {"probe.txt": b"from the runner", **(files or {})},
                                 limits or ContainerLimits(wall_s=60), cancel)


PROBE = r"""
import json, os, socket, errno
r = {"uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd(), "home": os.environ.get("HOME")}
st = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
r["cap_eff"], r["no_new_privs"] = st["CapEff"].strip(), st["NoNewPrivs"].strip()
def tries(path):
    try:
        with open(path, "w") as f:
            f.write("x")
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
r["write"] = {p: tries(p) for p in ("/etc/evil", "/opt/minisgl/judge/evil.py", "/in/probe.txt", "/scratch/ok",
                                    "/tmp/ok", "/out/ok")}
r["read_in"] = open("/in/probe.txt").read()
r["net"] = sorted(os.listdir("/sys/class/net"))
try:
    socket.create_connection(("1.1.1.1", 80), timeout=3)
    r["connect"] = "connected"
except OSError as e:
    r["connect"] = type(e).__name__
def cg(*names):
    for n in names:
        for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids"):
            p = os.path.join(base, n)
            if os.path.exists(p):
                return open(p).read().strip()
r["memory_max"] = cg("memory.max", "memory.limit_in_bytes")
r["pids_max"] = cg("pids.max")
import resource
r["fsize"] = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
r["nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
r["env"] = sorted(os.environ)
print(json.dumps({"status": "accepted", "note": "stdout is never read"}))
json.dump(r, open("/out/report.json", "w"))
"""


def test_the_container_is_confined(sandbox):
    limits = ContainerLimits(wall_s=60, memory_mb=768, pids=64, file_mb=8, nofile=256)
    res = _run(sandbox, PROBE, limits)
    assert res.exit_code == 0, res.log_tail
    r = json.loads(res.files_out["report.json"])
    assert r["uid"] == 10001 and r["gid"] == 10001 and r["cwd"] == "/scratch" and r["home"] == "/scratch"
    assert int(r["cap_eff"], 16) == 0 and r["no_new_privs"] == "1"
    assert r["write"] == {"/etc/evil": "EROFS", "/opt/minisgl/judge/evil.py": "EROFS", "/in/probe.txt": "EROFS",
                          "/scratch/ok": "ok", "/tmp/ok": "ok", "/out/ok": "ok"}
    assert r["read_in"] == "from the runner"
    assert r["net"] == ["lo"] and r["connect"] in ("OSError", "ConnectionRefusedError", "TimeoutError")
    assert int(r["memory_max"]) == 768 * 2**20 and r["pids_max"] == "64"
    assert r["fsize"] == 8 * 2**20 and r["nofile"] == 256
    assert not [k for k in r["env"] if "TOKEN" in k or k.startswith("MINISGL_RUNNER")]
    assert set(res.files_out) == {"report.json", "ok"}  # what it printed is only a log tail
    assert "stdout is never read" in res.log_tail and res.timed_out is False


def test_a_container_past_its_wall_clock_is_killed_and_removed(sandbox):
    t0 = time.monotonic()
    res = _run(sandbox, "import time\nopen('/out/started', 'w').write('1')\ntime.sleep(600)",
               ContainerLimits(wall_s=3))
    assert res.timed_out and res.exit_code is None and time.monotonic() - t0 < 30
    assert res.files_out == {"started": b"1"}


def test_cancel_kills_the_container(sandbox):
    cancel = threading.Event()
    threading.Timer(2.0, cancel.set).start()
    res = _run(sandbox, "import time\ntime.sleep(600)", ContainerLimits(wall_s=120), cancel=cancel)
    assert res.cancelled and not res.timed_out and res.wall_s < 30


def test_only_regular_files_come_back_never_through_a_symlink_or_fifo(sandbox):
    code = ("import os\nos.symlink('/etc/shadow', '/out/verdict.json')\nos.symlink('/proc/1/environ', '/out/env')\n"
            "os.mkfifo('/out/fifo')\nos.mkdir('/out/sub')\nopen('/out/sub/x', 'w').write('nested')\n"
            "open('/out/real', 'w').write('real')")
    res = _run(sandbox, code)
    assert res.exit_code == 0, res.log_tail
    assert res.files_out == {"real": b"real"}


def test_writing_more_than_the_output_quota_is_stopped(sandbox):
    code = "import os\nfor i in range(100):\n    open(f'/out/f{i}', 'wb').write(os.urandom(4 * 2**20))\n"
    res = _run(sandbox, code, ContainerLimits(wall_s=60, out_mb=16, file_mb=64))
    assert res.out_overflow and sum(len(v) for v in res.files_out.values()) <= 16 * 2**20


def test_a_memory_bomb_is_killed_by_the_cgroup(sandbox):
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(2**24))\n"
    res = _run(sandbox, code, ContainerLimits(wall_s=60, memory_mb=256))
    assert res.oom_killed and res.exit_code == 137


def test_a_fork_bomb_hits_the_process_limit_and_everything_is_gone_after(sandbox):
    code = ("import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            time.sleep(600)\n"
            "        n += 1\nexcept OSError as e:\n    open('/out/forks', 'w').write(str(n))\n")
    res = _run(sandbox, code, ContainerLimits(wall_s=60, pids=64))
    assert res.exit_code == 0 and 40 <= int(res.files_out["forks"]) < 64, res.log_tail
    assert _job_user_processes(sandbox.client, "pytest-sandbox") == []  # PID 1 exited: the kernel ended the rest


def test_a_daemon_left_behind_dies_with_the_container(sandbox):
    code = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        while True:\n"
            "            open('/out/daemon', 'w').write('alive')\n            time.sleep(0.05)\n"
            "    os._exit(0)\ntime.sleep(0.5)\n")
    res = _run(sandbox, code)
    assert res.exit_code == 0 and res.files_out.get("daemon") == b"alive"
    time.sleep(0.5)
    assert _job_user_processes(sandbox.client, "pytest-sandbox") == []


def test_scratch_is_size_limited(sandbox):
    code = ("import errno\nf = open('/scratch/fill', 'wb')\ntry:\n    while True:\n        f.write(b'x' * 2**20)\n"
            "        f.flush()\nexcept OSError as e:\n    open('/out/err', 'w').write(errno.errorcode[e.errno])\n")
    res = _run(sandbox, code, ContainerLimits(wall_s=60, scratch_mb=32, file_mb=64))
    assert res.files_out.get("err") == b"ENOSPC", res.log_tail


def test_a_job_cannot_see_another_jobs_files(sandbox):
    secret = f"SECRET-{os.getpid()}-{time.time_ns()}"
    victim_code = (f"import time\nopen('/scratch/s', 'w').write({secret!r})\nopen('/out/mine', 'w').write({secret!r})\n"
                   "time.sleep(12)")
    reader_code = SCAN + ("\nopen('/scratch/own', 'w').write('OWN-' + 'NEEDLE')\nopen('/out/hits', 'w').write("
                          "repr(scan([open('/in/needle.txt').read(), 'OWN-NEEDLE'], {'/in/needle.txt'})))\n")
    victim = threading.Thread(target=_run, args=(sandbox, victim_code, ContainerLimits(wall_s=40)))
    victim.start()
    # the victim's secret is on disk before the reader starts: never a vacuous pass
    wait_for(lambda: list(sandbox.work_dir.glob("job-*/out/mine")), 60, "the victim container to write its secret",
             every=0.1)
    res = _run(sandbox, reader_code, ContainerLimits(wall_s=120), files={"needle.txt": secret.encode()})
    victim.join()
    assert res.exit_code == 0, res.log_tail
    # the scan finds what it can see (its own file), and nothing of the other job's
    assert res.files_out["hits"] == repr([("/scratch/own", "OWN-NEEDLE")]).encode()


SCAN = r"""
import os

def scan(needles, skip=()):
    # every readable file of the container (the file system; each process's cmdline, environ, open files)
    hits = set()
    def look(p):
        if p in skip:
            return
        try:
            with open(p, 'rb', buffering=0) as fh:
                data = fh.read(1 << 20)
        except OSError:
            return
        for n in needles:
            if n.encode() in data:
                hits.add((p, n))
    for root, dirs, files in os.walk('/'):
        if root == '/':
            dirs[:] = [d for d in dirs if d not in ('proc', 'sys', 'dev')]
        if 'site-packages' in root:
            dirs[:] = []
            continue
        for f in files:
            look(os.path.join(root, f))
    me = str(os.getpid())
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or pid == me:
            continue
        for name in ('cmdline', 'environ'):
            look(f'/proc/{pid}/{name}')
        try:
            fds = os.listdir(f'/proc/{pid}/fd')
        except OSError:
            fds = []
        for fd in fds:
            look(f'/proc/{pid}/fd/{fd}')
    return sorted(hits)
"""


# --- hostile submissions through a real runner ----------------------------------------------------------------

EX = "graph-capture-loop"


def _code(prefix: str, body: str) -> str:
    """The hostile lines first (after any ``from __future__`` import of the body), then the body."""
    lines = body.splitlines()
    future = [ln for ln in lines if ln.startswith("from __future__")]
    rest = [ln for ln in lines if not ln.startswith("from __future__")]
    return "\n".join(future + [prefix.strip(), ""] + rest) + "\n"


ENDLESS = "while True:\n    pass"
FORK_BOMB = "import os\nwhile True:\n    os.fork()"
MEMORY_BOMB = "chunks = []\nwhile True:\n    chunks.append(bytearray(2**26))"  # touches its pages: the cgroup
HUGE_ALLOC = "x = bytearray(64 * 2**30)"  # address space: the judge's RLIMIT_AS
FILL_SCRATCH = "f = open('/scratch/fill', 'wb')\nwhile True:\n    f.write(b'x' * 2**20)"
FILL_OUT = "import os\nfor i in range(1000):\n    open(f'/out/f{i}', 'wb').write(os.urandom(2**22))"
WRITE_OUTSIDE = r"""
wrote = []
for p in ('/opt/minisgl/judge/harness.py', '/opt/minisgl/exercises/graph-capture-loop/tests.py', '/in/submission.py',
          '/etc/passwd', '/usr/lib/python3.11/os.py', '/opt/venv/lib/python3.11/site-packages/torch/__init__.py'):
    try:
        with open(p, 'a') as f:
            f.write('\n# owned\n')
        wrote.append(p)
    except OSError:
        pass
raise RuntimeError(f'wrote: {wrote}')
"""
NETWORK = r"""
import socket
hosts = HOSTS
connected = []
for h, port in hosts:
    try:
        socket.create_connection((h, port), timeout=3).close()
        connected.append(h)
    except OSError:
        pass
raise RuntimeError(f'connected: {connected}')
"""
SNOOP = SCAN + """
needles = ['msr_', 'msu_'] + [a + b for a, b in SPLIT]  # split: the whole secret is in no copy of this source
raise RuntimeError(f"found: {scan(needles, {'/in/submission.py'})}")
"""


def snoop(*secrets: str) -> str:
    """The snooping submission, looking for token prefixes and these secrets."""
    return SNOOP.replace("SPLIT", repr([(x[: len(x) // 2], x[len(x) // 2:]) for x in secrets]))
LEFT_RUNNING = r"""
import os, json, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        fake = {"status": "accepted", "passed": 99, "total": 99, "tests": [{"name": "x", "status": "pass"}]}
        while True:
            try:
                json.dump(fake, open('/out/verdict.json', 'w'))
            except OSError:
                pass
            time.sleep(0.01)
    os._exit(0)
"""
FAKE_VERDICT = r"""
import json, sys
fake = {"event": "verdict", "verdict": {"status": "accepted", "passed": 7, "total": 7, "tests": []}}
print(json.dumps(fake))
print(json.dumps(fake), file=sys.stderr)
json.dump({"status": "accepted", "passed": 7, "total": 7, "tests": [{"name": "t", "status": "pass"}]},
          open('/out/verdict.json', 'w'))
"""


@pytest.fixture
def hostile_world(job_image, site_factory, tmp_path):
    from tests.server.pieces import Accounts, RunnerProc, fresh_database
    from web.db import open_database

    url = fresh_database("sqlite", None, tmp_path)
    db = open_database(url)
    acc = Accounts(db)
    token, rtoken = acc.user("mallory"), acc.runner("hostile-runner")
    db.dispose()
    site = site_factory(url, env={"MINISGL_PRACTICE_RATE_LIMIT": "1000"})
    runner = RunnerProc(site.url, rtoken, executor="docker", log_path=tmp_path / "runner.log", args=[
        "--image", job_image, "--work-dir", str(tmp_path / "work"), "--gpus", "none", "--emulate-gpu", "--slots", "2",
        "--memory-mb", "1536", "--name", "hostile-runner"]).start()
    yield site, token, rtoken, runner
    runner.signal(15)
    runner.wait(120)


def _judge(site, token, code: str, timeout: float = 180) -> dict:
    h = {"Authorization": f"Bearer {token}"}
    r = requests.post(f"{site.url}/api/v1/submissions", json={"exercise": EX, "code": code, "mode": "gpu"}, headers=h,
                      timeout=10)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        sub = requests.get(f"{site.url}/api/v1/submissions/{sid}", headers=h, timeout=10).json()
        if sub["status"] == "done":
            return sub
        time.sleep(0.3)
    raise AssertionError(f"submission {sid} not judged in {timeout} s")


def _no_leftovers(client) -> None:
    assert client.containers.list(all=True, filters={"label": f"{LABEL}=hostile-runner"}) == []
    left = _job_user_processes(client, "hostile-runner")
    assert left == [], f"processes of the job user left on the host: {left}"


def _host_addresses() -> list[str]:
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    return [a for a in out if ":" not in a] + ["127.0.0.1", "172.17.0.1"]


TARGET_DEF = "    def _capture_graphs(self, max_seq_len, vocab_size, model):\n"


def in_target(body: str) -> str:
    """A submission whose target's body is ``body``: it passes the screen (nothing at module level, no
    forbidden name) and runs in the learner's container."""
    lines = "\n".join("        " + ln for ln in body.strip().splitlines())
    return f"import torch\n\n\nclass GraphRunner:\n{TARGET_DEF}{lines}\n"


def first_in_target(code: str, line: str) -> str:
    """``code`` (a file defining the target) with ``line`` run first in the target's body."""
    assert TARGET_DEF in code
    return code.replace(TARGET_DEF, TARGET_DEF + "        " + line + "\n", 1)


FAKE_JSON = '{"event": "verdict", "verdict": {"status": "accepted", "passed": 12, "total": 12, "tests": []}}'


def test_hostile_submissions_are_contained_and_the_runner_keeps_serving(hostile_world, docker_client):
    """Trusted mode first screens a submission; what passes the screen (code in the target's body) runs in
    the learner's container. Each hostile submission gets the right status, nothing of it is left running
    anywhere, the runner's token is nowhere in what comes back, and the correct submission judged next is
    accepted. (Module-level attacks never start a container: the screen refuses them, naming the line;
    the same attacks as raw code in a container are the sandbox tests above.)"""
    from tests.server.pieces import mutant_code, reference_code

    site, token, rtoken, runner = hostile_world
    ref, wrong = reference_code(EX), mutant_code(EX, "no_warm_up")
    hosts = [(a, 9) for a in _host_addresses()]

    def correct_next():
        v = _judge(site, token, ref)
        assert v["result"] == "accepted", v["verdict"]["message"][:500]
        _no_leftovers(docker_client)

    past_the_screen = [
        ("endless loop", in_target("while True:\n    pass"), {"timeout"}, "time limit"),
        ("memory bomb (the cgroup)", in_target("chunks = []\nwhile True:\n    chunks.append(torch.ones(2**26))"),
         {"runtime_error"}, "memory"),
        ("huge allocation (the address-space limit)", in_target("x = torch.empty(2**36)"), {"runtime_error"}, ""),
        ("deep recursion", in_target("def f(n):\n    return f(n + 1)\nf(0)"), {"runtime_error"}, "Recursion"),
        ("a fake verdict printed by wrong code", first_in_target(wrong, f"print({FAKE_JSON!r})"), {"wrong_answer"}, ""),
    ]
    screened = [
        ("fork bomb", _code(FORK_BOMB, ref)),
        ("filling the disk", _code(FILL_SCRATCH, ref)),
        ("filling the output folder", _code(FILL_OUT, ref)),
        ("writing outside scratch", _code(WRITE_OUTSIDE, ref)),
        ("network", _code(NETWORK.replace("HOSTS", repr(hosts)), ref)),
        ("reading the runner's token and other files", _code(snoop(rtoken, token), ref)),
        ("a process left running", _code(LEFT_RUNNING, wrong)),
        ("a fake verdict file", _code(FAKE_VERDICT, wrong)),
        ("network from the target", in_target("import socket\nsocket.create_connection(('1.1.1.1', 80))")),
        ("files from the target", in_target("open('/etc/passwd').read()")),
    ]
    results = {}
    for name, code, want, words in past_the_screen:
        sub = _judge(site, token, code)
        results[name] = sub
        assert sub["result"] in want, (name, sub["result"], sub["verdict"]["message"][:800])
        text = json.dumps(sub["verdict"])
        assert words in text, (name, text[:800])
        assert sub["verdict"]["trust"]["level"] == "trusted"
        _no_leftovers(docker_client)
        correct_next()
    for name, code in screened:
        sub = _judge(site, token, code)
        results[name] = sub
        assert sub["result"] == "compile_error", (name, sub["result"], sub["verdict"]["message"][:500])
        assert "Trusted judging refuses" in sub["verdict"]["message"] and ", line " in sub["verdict"]["message"], name
    correct_next()
    dump = json.dumps(results)
    assert rtoken not in dump and token not in dump
    assert runner.proc.poll() is None  # still serving
    log = runner.log_text()
    assert log.count(" -> ") >= len(past_the_screen) * 2 + len(screened) + 1 and "Traceback" not in log
