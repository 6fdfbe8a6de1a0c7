"""The embedded default: ``python -m web.embedded [--port 8000]``: the site and a grading runner on one
machine, nothing to install or configure.

- the database is SQLite in the instance folder (migrated at start);
- a runner named ``this-machine`` (``RUNNER``; the page calls it "this machine's runner") is registered
  once (its token kept in ``instance/embedded-runner-token``, mode 0600; a row named ``embedded``, as older
  versions called it, is renamed) and started as a subprocess with the ``local`` executor: GPU-mode
  submissions are judged on this machine's GPU if it has one, else on the CPU with emulated CUDA graphs
  (the verdict says so);
- a staff account ``me`` is made on first start, and every start prints a one-time login link for it;
- it serves plain http, so the session cookie is not ``Secure`` here (everywhere else it is by default).

It stops the runner when it stops (Ctrl+C, SIGTERM or SIGHUP). For a course, deploy the real thing instead
(docs/deploy.md).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from sqlalchemy import delete, select

from .models import THIS_MACHINE

ROOT = Path(__file__).resolve().parent.parent
USER = "me"
RUNNER = THIS_MACHINE
OLD_RUNNER_NAMES = ("embedded",)  # what older versions named it: renamed at start


def _runner_token(app) -> Path:
    from . import auth
    from .grading import get_grading
    from .models import Runner

    db = get_grading(app).db
    path = Path(app.instance_path) / "embedded-runner-token"
    with db.session() as s:
        row = s.scalar(select(Runner).where(Runner.name == RUNNER))
        if row is None:
            row = s.scalar(select(Runner).where(Runner.name.in_(OLD_RUNNER_NAMES)))
            if row is not None:
                row.name = RUNNER  # its token and its submissions stay with it
        if row is not None and path.exists() and row.token_hash == auth.hash_token(path.read_text().strip()):
            return path
        if row is not None:
            s.execute(delete(Runner).where(Runner.id == row.id))
    token = auth.create_runner(db, RUNNER)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token)
    return path


def _login_link(app, base: str) -> str:
    from . import auth
    from .grading import get_grading

    db = get_grading(app).db
    if auth.find_user(db, USER) is None:
        auth.create_user(db, USER, None, staff=True)
    return f"{base}/login/link/{auth.create_link(db, kind='login', username=USER, hours=24)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m web.embedded", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--no-runner", action="store_true", help="the site alone")
    args = ap.parse_args(argv)
    return serve(args.host, args.port, runner=not args.no_runner)


def serve(host: str, port: int, *, runner: bool = True) -> int:
    """The site on SQLite in the instance folder, with a local runner (``python -m web`` calls this)."""
    os.environ.pop("DATABASE_URL", None)
    from . import create_app
    from .grading import get_grading

    app = create_app({"DATABASE_URL": None, "SESSION_COOKIE_SECURE": False})  # plain http on this machine
    base = f"http://{host}:{port}"
    with_runner, runner = runner, None
    if with_runner:
        token_file = _runner_token(app)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        runner = subprocess.Popen([sys.executable, "-m", "runner", "--server", base, "--executor", "local",
                                   "--token-file", str(token_file), "--work-dir",
                                   str(Path(app.instance_path) / "jobs")], env=env, cwd=str(ROOT))
    print(f"\n  minisgl practice: {base}/  (Ctrl+C stops it)\n  log in (once, within 24 h): {_login_link(app, base)}\n"
          f"  grading: {'a local runner (python -m runner --executor local)' if runner else 'no runner'}; "
          f"database: {get_grading(app).db.url}\n", flush=True)
    def stop(signum, _frame):  # kill -TERM / a closed terminal: leave through `finally`, which stops the runner
        raise SystemExit(0)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    try:
        from werkzeug.serving import run_simple

        run_simple(host, port, app, threaded=True, use_reloader=False)
    finally:
        if runner is not None:
            runner.terminate()
            try:
                runner.wait(30)
            except subprocess.TimeoutExpired:
                runner.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
