"""Start `python -m minisgl serve` for a test: a real server in its own process on a free port."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[2]
_READY = re.compile(r"serving \S+ at (http://\S+) ")


@dataclass
class Served:
    proc: subprocess.Popen
    url: str
    log: list[str] = field(default_factory=list)  # the server's stderr lines, as they come
    ready: threading.Event = field(default_factory=threading.Event)  # set at the ready line, or when stderr ends

    def wait_ready(self, timeout: float = 180) -> Served:
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.5):
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("the server did not get ready in time:\n" + "\n".join(self.log))
        if not self.url:
            self.proc.wait(10)
            raise RuntimeError(f"the server exited ({self.proc.returncode}) before it was ready:\n"
                               + "\n".join(self.log))
        return self

    def workers(self) -> dict[str, int]:
        """The worker processes' names (as `ps` shows them, e.g. msgl-scheduler) and pids."""
        out = {}
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            for pid in (task / "children").read_text().split():
                try:
                    out[Path(f"/proc/{pid}/comm").read_text().strip()] = int(pid)
                except FileNotFoundError:
                    pass
        return out

    def stats(self) -> dict:
        r = requests.get(f"{self.url}/stats", timeout=30)
        r.raise_for_status()
        return r.json()

    def stop(self, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def launch_server(model: Path | str, *extra: str, env: dict[str, str] | None = None) -> Served:
    """Start the server and return at once; ``wait_ready`` waits for its ready line."""
    cmd = [sys.executable, "-m", "minisgl", "serve", "--model", str(model), "--port", "0", *extra]
    proc = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env={**os.environ, **(env or {})})
    served = Served(proc, "")

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            served.log.append(line.rstrip("\n"))
            m = _READY.search(line)
            if m and not served.ready.is_set():
                served.url = m.group(1)
                served.ready.set()
        served.ready.set()

    threading.Thread(target=read, daemon=True).start()
    return served


def start_server(model: Path | str, *extra: str, env: dict[str, str] | None = None, timeout: float = 180) -> Served:
    """Start the server and wait until it serves."""
    return launch_server(model, *extra, env=env).wait_ready(timeout)
