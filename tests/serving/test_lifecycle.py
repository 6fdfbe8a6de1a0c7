"""The server's processes: a worker that dies makes the server answer 503 and exit naming it; SIGTERM or SIGINT
with requests in flight stops every process within 10 s and leaves no IPC file. Real servers on a tiny model."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import msgpack
import pytest
import requests
import zmq

from tests.serving.running import Served, start_server

MODEL = "tiny-llama-gqa-untied-seed0-v2"
LONG = {"model": MODEL, "prompt": "hello world", "max_tokens": 500, "temperature": 0, "ignore_eos": True}


def _start(tmp_path: Path) -> Served:
    from minisgl.testing import tiny_model

    # one tokenizer worker, so that each kind of worker is there; TMPDIR: where the IPC folder goes
    return start_server(tiny_model("llama"), "--num-tokenizer", "1", env={"TMPDIR": str(tmp_path)})


def _ipc_dirs(tmp: Path) -> list[Path]:
    return [p for p in tmp.iterdir() if p.name.startswith("minisgl-ipc-")]  # (torch may put its own folders there)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def _in_flight(served: Served, n: int, stream: bool) -> tuple[list[threading.Thread], list]:
    """n long requests running in threads; each one's outcome lands in the list."""
    results: list = []

    def ask() -> None:
        try:
            r = requests.post(f"{served.url}/v1/completions", json={**LONG, "stream": stream}, timeout=60)
            results.append((r.status_code, r.text))
        except requests.RequestException as e:
            results.append((None, repr(e)))

    threads = [threading.Thread(target=ask) for _ in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while served.stats()["requests"] < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return threads, results


@pytest.mark.parametrize("worker", ["msgl-scheduler", "msgl-detokenize", "msgl-tokenizer0"])
def test_a_dead_worker_makes_the_server_answer_503_and_exit_naming_it(tmp_path, worker):
    served = _start(tmp_path)
    try:
        pids = served.workers()
        assert set(pids) >= {"msgl-scheduler", "msgl-detokenize", "msgl-tokenizer0"}, pids
        threads, results = _in_flight(served, 2, stream=False)
        os.kill(pids[worker], signal.SIGKILL)
        code = served.proc.wait(15)
        for t in threads:
            t.join(15)
        assert code != 0
        role = {"msgl-scheduler": "scheduler", "msgl-detokenize": "detokenizer", "msgl-tokenizer0": "tokenizer-0"}
        assert any(f"the {role[worker]} process (pid {pids[worker]}) died" in line for line in served.log), served.log
        assert [s for s, _ in results] == [503, 503], results
        assert all(role[worker] in text for _, text in results), results
        deadline = time.monotonic() + 10
        while not all(_gone(p) for p in pids.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(_gone(p) for p in pids.values()), "a worker outlived the server"
        assert _ipc_dirs(tmp_path) == [], "IPC files were left behind"
    finally:
        if served.proc.poll() is None:
            served.proc.kill()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_with_requests_in_flight_stops_every_process_within_10_s_and_leaves_no_ipc_file(tmp_path, sig):
    served = _start(tmp_path)
    try:
        pids = served.workers()
        (ipc,) = _ipc_dirs(tmp_path)
        # bytes that are not messages, into every socket a process listens on: logged, and serving goes on
        ctx = zmq.Context.instance()
        for name in ("scheduler", "detokenizer", "api"):
            push = ctx.socket(zmq.PUSH)
            push.connect(f"ipc://{ipc}/{name}")
            for junk in (b"", b"\xc1", msgpack.packb({"type": "AbortMsg", "body": {"uid": "x"}}), os.urandom(64)):
                push.send(junk)
            push.close(linger=1000)
        r = requests.post(f"{served.url}/v1/completions", json={**LONG, "max_tokens": 3}, timeout=30)
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 3, r.text
        assert sum("not a valid message" in line for line in served.log) >= 12, served.log
        threads, _ = _in_flight(served, 4, stream=True)
        t0 = time.monotonic()
        served.proc.send_signal(sig)
        code = served.proc.wait(10)
        while not all(_gone(p) for p in pids.values()) and time.monotonic() - t0 < 10:
            time.sleep(0.1)
        assert time.monotonic() - t0 < 10 and all(_gone(p) for p in pids.values())
        assert code == 0, served.log
        assert _ipc_dirs(tmp_path) == [], "IPC files were left behind"
        for t in threads:
            t.join(10)
    finally:
        if served.proc.poll() is None:
            served.proc.kill()


def test_a_killed_launcher_takes_its_workers_with_it(tmp_path):
    served = _start(tmp_path)
    pids = served.workers()
    served.proc.kill()
    served.proc.wait(10)
    deadline = time.monotonic() + 10
    while not all(_gone(p) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(p) for p in pids.values()), "workers outlived a SIGKILLed launcher"
