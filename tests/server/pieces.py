"""The real pieces the grading-server tests (and ``benchmarks/server.py``) start: a PostgreSQL cluster, the
site under gunicorn on 127.0.0.1, runners as processes, the Docker daemon. Each stops what it started.

Ports: the site on 127.0.0.1:8300-8399, PostgreSQL on 55300-55399 (this project's ranges).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.support import free_port  # noqa: F401 - the tests import it from here too

ROOT = Path(__file__).resolve().parents[2]
PG_BIN = Path("/usr/lib/postgresql/15/bin")


def pg_bin(name: str) -> str | None:
    p = PG_BIN / name
    return str(p) if p.exists() else shutil.which(name)


def have_postgres() -> bool:
    return pg_bin("initdb") is not None and pg_bin("pg_ctl") is not None


def wait_http(url: str, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args[:3]} exited with {proc.returncode}")
        try:
            requests.get(url, timeout=2)
            return
        except requests.RequestException:
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer in {timeout} s")



def wait_for(cond, timeout: float, what: str, every: float = 0.2):
    """cond()'s first true value, polled every ``every`` s; AssertionError after ``timeout`` s."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        value = cond()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@dataclass
class PgCluster:
    """A throw-away PostgreSQL cluster (initdb + pg_ctl in a temporary folder)."""

    port: int = 0
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pg-", dir="/tmp")))

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = list(argv)
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        return subprocess.run(cmd, check=check, capture_output=True, text=True)

    def start(self) -> PgCluster:
        self.port = self.port or free_port(range(55300, 55400))
        data = self.folder / "data"
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
        if not data.exists():
            self._run(pg_bin("initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
            with open(data / "postgresql.conf", "a") as f:
                f.write(f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n"
                        "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 300\n")
        self._run(pg_bin("pg_ctl"), "-D", str(data), "-l", str(self.folder / "log"), "-w", "-t", "30", "start")
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run(pg_bin("pg_ctl"), "-D", str(self.folder / "data"), "-m", mode, "-w", "stop", check=False)

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def create_database(self, name: str | None = None) -> str:
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def fresh_database(kind: str, pg: PgCluster | None, folder: Path) -> str:
    """A new, migrated database: ``sqlite`` (a file in ``folder``) or ``postgresql`` (a new database)."""
    from web import db as dbm

    if kind == "sqlite":
        url = f"sqlite:///{folder / f'db-{uuid.uuid4().hex[:8]}.sqlite3'}"
    else:
        assert pg is not None
        url = pg.create_database()
    dbm.upgrade(url)
    return url


@dataclass
class Site:
    """The site under gunicorn on 127.0.0.1, as its own process group: gevent workers as deployed
    (docker/site.Dockerfile), or ``worker_class="gthread"`` with ``threads`` threads each."""

    database_url: str
    instance: Path
    workers: int = 2
    threads: int = 32
    env: dict[str, str] = field(default_factory=dict)
    worker_class: str = "gevent"
    port: int = 0
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> Site:
        self.port = self.port or free_port(range(8300, 8400))
        env = {**os.environ, "DATABASE_URL": self.database_url, "PYTHONPATH": str(ROOT),
               "MINISGL_PRACTICE_SECRET_KEY": "test-secret",
               "MINISGL_PRACTICE_SESSION_COOKIE_SECURE": "false",  # plain http (the default is Secure)
               "MINISGL_PRACTICE_SIMILARITY_SECONDS": "0",  # off (it would import copydetect and the engine)
               **self.env}
        self.log = open(self.instance / f"site-{self.port}.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{self.port}", "--workers", str(self.workers),
             "--worker-class", self.worker_class, *(["--threads", str(self.threads)] if self.worker_class == "gthread"
                                                    else ["--worker-connections", "1000"]),
             "--timeout", "60", "--graceful-timeout", "2", "--keep-alive", "30", "--chdir", str(ROOT),
             "web:create_app()"],
            env=env, stdout=self.log, stderr=self.log, start_new_session=True, cwd=str(ROOT))
        wait_http(self.url + "/api/v1/grading", timeout, self.proc)
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def log_text(self) -> str:
        return (self.instance / f"site-{self.port}.log").read_text(errors="replace")


@dataclass
class RunnerProc:
    """``python -m runner`` as a real process."""

    server: str
    token: str
    executor: str = "local"
    args: list[str] = field(default_factory=list)
    log_path: Path | None = None
    proc: subprocess.Popen | None = None

    def start(self) -> RunnerProc:
        env = {**os.environ, "PYTHONPATH": str(ROOT),
               "MINISGL_RUNNER_TOKEN": self.token}
        self.log_path = self.log_path or Path(tempfile.mktemp(prefix="runner-", suffix=".log", dir="/tmp"))
        self.log = open(self.log_path, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "--server", self.server, "--executor", self.executor,
             "--claim-wait", "2", *self.args],
            env=env, stdout=self.log, stderr=self.log, start_new_session=True, cwd=str(ROOT))
        return self

    def signal(self, sig: int) -> None:
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        """SIGKILL the runner and everything it started (its process group)."""
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""


def docker_ok() -> bool:
    try:
        import docker

        docker.from_env(timeout=5).ping()
        return True
    except Exception:  # noqa: BLE001
        return False


def start_dockerd() -> bool:
    """Start ``dockerd --iptables=false --bridge=none`` when it is installed, we are root and none runs."""
    if docker_ok():
        return True
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        return False
    log = open("/tmp/minisgl-dockerd.log", "ab")  # noqa: SIM115
    subprocess.Popen(["dockerd", "--iptables=false", "--bridge=none"], stdout=log, stderr=log,
                     start_new_session=True)
    for _ in range(100):
        if docker_ok():
            return True
        time.sleep(0.1)
    return False


@dataclass
class Accounts:
    """Users, tokens and runners made directly in the database (what the admin commands do)."""

    db: object

    def user(self, name: str, password: str = "correct horse", staff: bool = False) -> str:
        from web import auth

        auth.create_user(self.db, name, password, staff=staff)
        return auth.create_api_token(self.db, name)

    def runner(self, name: str) -> str:
        from web import auth

        return auth.create_runner(self.db, name)


def reference_code(slug: str = "graph-capture-loop") -> str:
    from judge.exercise import find_exercise
    from judge.solution import reference_source

    return reference_source(find_exercise(slug))


def mutant_code(slug: str = "graph-capture-loop", name: str = "no_warm_up") -> str:
    return (ROOT / "exercises" / slug / "mutants" / f"{name}.py").read_text()


EX = "graph-capture-loop"
FAST = {"MINISGL_PRACTICE_LEASE_SECONDS": "2", "MINISGL_PRACTICE_REAPER_SECONDS": "0.5",
        "MINISGL_PRACTICE_MAX_ATTEMPTS": "50", "MINISGL_PRACTICE_RATE_LIMIT": "100000",
        "MINISGL_PRACTICE_QUEUE_CAP": "100000", "MINISGL_PRACTICE_MAX_QUEUED_PER_USER": "100000",
        "MINISGL_PRACTICE_POLL_SECONDS": "0.1"}
SLEEPY = "tests.server.sleepy:SleepyExecutor"  # a runner executor that only sleeps


class World:
    """A database with a learner, a staff member and runners, and the site on it (runners started on demand)."""

    def __init__(self, url: str, site_factory, runners: int = 1, **site_kw):
        self.url = url
        from web.db import open_database

        self.db = open_database(url)
        acc = Accounts(self.db)
        self.token = acc.user("alice")
        self.staff = acc.user("staff", staff=True)
        self.runner_tokens = [acc.runner(f"r{i}") for i in range(runners)]
        self.site = site_factory(url, env={**FAST, **site_kw.pop("env", {})}, **site_kw)

    def submit(self, code: str, mode: str = "gpu") -> int:
        r = requests.post(f"{self.site.url}/api/v1/submissions", json={"exercise": EX, "code": code, "mode": mode},
                          headers={"Authorization": f"Bearer {self.token}"}, timeout=10)
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def rows(self) -> dict:
        from sqlalchemy import select

        from web.models import Submission

        with self.db.session() as s:
            return {sub.id: sub for sub in s.scalars(select(Submission))}

    def runner(self, i: int, tmp_path, executor: str = SLEEPY, args=()) -> RunnerProc:
        return RunnerProc(self.site.url, self.runner_tokens[i], executor=executor,
                          args=["--work-dir", str(tmp_path / f"work{i}"), *args],
                          log_path=tmp_path / f"runner{i}.log").start()
