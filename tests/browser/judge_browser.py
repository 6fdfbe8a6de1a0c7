"""Helpers of the browser judge's tests (fixtures are in conftest.py beside this file)."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "tests" / "fixtures" / "toy"
PORTS = range(8100, 8200)  # this worktree's port range
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
IN_CI = os.environ.get("CI", "").lower() == "true"

sys.path.insert(0, str(REPO / "tools"))
import build_browser  # noqa: E402


def need(condition: bool, reason: str) -> None:
    """Skip when a piece is missing on a developer's machine; fail under CI=true (tests/conftest.py: need)."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


def layer_present() -> bool:
    return (REPO / "web" / "browser" / "pyproject.toml").is_file()


def need_layer() -> None:
    need(layer_present(), "the numpy `torch` layer is not there yet (web/browser/pyproject.toml, branch torch)")


def python312() -> str | None:
    try:
        return build_browser.find_python312()
    except build_browser.BuildError:
        return None


def toy_sources() -> dict[str, str]:
    """The toy exercise's submissions of these tests: a good one and the hostile ones."""
    good = (TOY / "good_submission.py").read_text()
    body = "return [v * k for v in values]"
    assert body in good
    return {
        "good": good,
        "loop_in_target": good.replace(body, "while True:\n        pass"),
        "loop_at_module_level": good + "\nwhile True:\n    pass\n",
        "os_exit": good.replace(body, "import os\n    os._exit(3)"),
    }


def free_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS.start}-{PORTS.stop - 1}")


@contextmanager
def serve(site: Path, exercises: Path | None = None):
    """The Flask site on 127.0.0.1 (a free port of this worktree's range), serving ``site``; yields its base URL."""
    from werkzeug.serving import make_server

    from web import create_app

    app = create_app({"BROWSER_SITE": str(site), "BROWSER_EXERCISES": str(exercises) if exercises else None})
    srv = make_server("127.0.0.1", free_port(), app, threaded=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}"
    finally:
        srv.shutdown()
        t.join(10)


def chromium_path() -> str | None:
    return shutil.which("chromium")
