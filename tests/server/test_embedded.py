"""The embedded default: ``python -m web`` (the README's ``make run``) starts the site on SQLite with a local
runner, and a GPU-mode submission made with the session cookie (as the page does) is judged, on the CPU with
emulated CUDA graphs here, and the verdict says so."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import requests
from sqlalchemy import select

from tests.server.pieces import ROOT, free_port, reference_code, wait_for, wait_http
from tests.server.sse import watch


def test_embedded_default_judges_a_gpu_submission_end_to_end(tmp_path):
    port = free_port(range(8300, 8400))
    env = {**os.environ, "MINISGL_PRACTICE_INSTANCE_PATH": str(tmp_path / "instance"), "PYTHONPATH": str(ROOT)}
    env.pop("DATABASE_URL", None)
    log = open(tmp_path / "embedded.log", "w+")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "web", "--port", str(port)], cwd=str(ROOT), env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/api/v1/grading", 60, proc)
        text = (tmp_path / "embedded.log").read_text()
        link = re.search(r"log in \(once, within 24 h\): (\S+)", text).group(1)
        assert f"minisgl practice: {base}/" in text and "practice.sqlite3" in text
        s = requests.Session()
        page = s.get(link, timeout=10)
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
        assert s.post(link, data={"csrf_token": csrf}, timeout=10, allow_redirects=False).status_code == 302
        me = s.get(f"{base}/api/v1/me", timeout=10).json()
        assert me["user"] == {"username": "me", "staff": True}
        wait_for(lambda: s.get(f"{base}/api/v1/grading", timeout=10).json()["runners"] >= 1, 60,
                 "the embedded runner to show up")
        r = s.post(f"{base}/api/v1/submissions", headers={"X-CSRF-Token": me["csrf_token"]}, timeout=10,
                   json={"exercise": "graph-capture-loop", "code": reference_code(), "mode": "gpu"})
        assert r.status_code == 201, r.text
        # the page's EventSource sends the cookie: so does this session
        stream = watch_cookie(s, f"{base}{r.json()['links']['events']}")
        done = stream[-1]
        assert done["status"] == "done" and done["result"] == "accepted", done["verdict"]["message"]
        assert done["judged_on"]["emulated"] is True and "emulated" in done["judged_on"]["note"]
        assert done["verdict"]["mode"] == "local" and done["verdict"]["env"]["device"] == "cpu"
        assert (tmp_path / "instance" / "practice.sqlite3").exists()
        assert oct((tmp_path / "instance" / "embedded-runner-token").stat().st_mode & 0o777) == "0o600"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    # a second start reuses the database and the runner's token
    proc = subprocess.Popen([sys.executable, "-m", "web", "--port", str(port)], cwd=str(ROOT), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_http(base + "/api/v1/grading", 60, proc)
        wait_for(lambda: requests.get(f"{base}/api/v1/grading", timeout=10).json()["runners"] >= 1, 60,
                 "the embedded runner to show up")
        proc.send_signal(signal.SIGTERM)  # the site's own process only, as `kill -TERM` would
        assert proc.wait(60) == 0
        wait_for(lambda: not _group_alive(proc.pid), 30, "the embedded runner to stop with the site")
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def test_a_runner_named_embedded_by_an_older_instance_is_renamed_and_keeps_its_token(app, grading):
    """Older versions named the embedded runner ``embedded``: a start finds that row, renames it to the name
    that says what it is, and keeps its token (the token file still works; no second runner)."""
    from web import auth, embedded
    from web.models import Runner

    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    token = auth.create_runner(grading.db, "embedded")
    (Path(app.instance_path) / "embedded-runner-token").write_text(token)
    assert embedded._runner_token(app).read_text() == token
    with grading.db.session() as s:
        assert s.scalars(select(Runner.name)).all() == ["this-machine"]
    c = app.test_client()
    claim = c.post("/api/v1/runner/claim", json={"wait": 0}, headers={"Authorization": f"Bearer {token}"})
    assert claim.status_code == 204
    assert c.get("/api/v1/grading").json["online"][0]["runner"] == "this machine's runner"


def _group_alive(pgid: int) -> bool:
    """Whether any process of this process group is still running (zombies aside)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def watch_cookie(session: requests.Session, url: str) -> list[dict]:
    import json

    events = []
    with session.get(url, stream=True, timeout=(5, 120)) as r:
        for line in r.iter_lines(decode_unicode=True):
            if line and line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if events[-1]["status"] in ("done", "cancelled"):
                    break
    return events


_ = watch  # the token-based client lives in server.sse
