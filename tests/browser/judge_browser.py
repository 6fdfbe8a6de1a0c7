"""Helpers of the browser judge's tests (their fixtures are in conftest.py beside this file)."""

from __future__ import annotations

import atexit
import functools
import os
import random
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from browser import build as browser_build
from browser.check import status_differences
from tests.support import free_port, need

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "tests" / "fixtures" / "toy"
PORTS = range(8100, 8200)  # this worktree's port range


def layer_present() -> bool:
    return (REPO / "browser" / "compat" / "torch" / "__init__.py").is_file()


def need_layer() -> None:
    need(layer_present(), "the numpy `torch` layer is not there yet (browser/compat/torch)")


def python312() -> str | None:
    try:
        return browser_build.find_python312()
    except browser_build.BuildError:
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
        "swallow_interrupt": good.replace(body, "while True:\n        try:\n            while True:\n"
                                                "                pass\n        except BaseException:\n"
                                                "            pass"),
    }


@contextmanager
def serve(site: Path, exercises: Path | None = None):
    """The Flask site on 127.0.0.1 (a free port of this worktree's range), serving ``site``; yields its base URL."""
    from werkzeug.serving import make_server

    from web import create_app

    app = create_app({"BROWSER_SITE": str(site), "BROWSER_EXERCISES": str(exercises) if exercises else None})
    srv = make_server("127.0.0.1", free_port(PORTS), app, threaded=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}"
    finally:
        srv.shutdown()
        t.join(10)


def check_jobs() -> list[tuple[str, str, str | None, str, bool]]:
    """(exercise, label, source, filename, run_only) for every browser exercise: what `check` judges (the
    reference by Submit and Run, the alternative solutions, the starter, the mutants)."""
    from judge.exercise import list_exercises
    from judge.validate import judged_files

    out = []
    for e in list_exercises(REPO / "exercises"):
        if "browser" not in e.modes:
            continue
        for kind, name, src in judged_files(e):  # the reference's source: None, the browser derives its own
            label = {"reference": "reference", "starter": "starter", "mutant": name}.get(kind)
            out.append((e.slug, label or f"{kind} {name.split('/')[-1]}", None if kind == "reference" else src,
                        name, False))
            if kind == "reference":
                out.append((e.slug, "reference --run", None, "reference.py", True))
    return out


def compare_with_local(jobs, local, browser) -> list[str]:
    """Differences between local and browser verdicts of the same jobs, plus any broken expectation."""
    problems = []
    for (slug, label, *_), lv, bv in zip(jobs, local, browser):
        where = f"{slug} {label}"
        differ = status_differences(lv, bv)
        if differ:
            problems.append(f"{where}: per-test statuses differ: {differ}")
        if bv.mode != "browser" or lv.mode != "local":
            problems.append(f"{where}: modes {lv.mode}/{bv.mode}")
        if label.startswith(("reference", "alternative")):
            if not bv.accepted:
                problems.append(f"{where}: {bv.status} in the browser (must be accepted)")
        elif bv.accepted or bv.status == "internal_error":
            problems.append(f"{where}: {bv.status} in the browser (must be rejected, not internal_error)")
    return problems


# ---------------------------------------------------------------------------------------------------------
# What the tests share, computed once per session (a conftest.py here would shadow tests/conftest.py: pytest
# imports every conftest.py as the module "conftest", and the suite's modules do `from conftest import ...`).
# Each test module wraps these in its own fixtures.


def need_build_tools() -> None:
    need(shutil.which("node") is not None, "node is not installed (apt-get install nodejs npm)")
    need(shutil.which("npm") is not None, "npm is not installed (apt-get install npm)")
    need(python312() is not None, "no Python 3.12 (Pyodide's Python) for the wheels and the lock (pyenv install 3.12)")


@functools.cache
def _site() -> Path:
    return browser_build.build(quiet=True).parent


def site() -> Path:
    """The site's own build (browser/build.py, incremental): the real exercises."""
    need_build_tools()
    return _site()


@functools.cache
def _toy_site() -> Path:
    out = Path(tempfile.mkdtemp(prefix="judge-toy-site-"))
    atexit.register(shutil.rmtree, out, True)
    return browser_build.build(out, TOY / "exercises", [TOY / "toyengine"], quiet=True).parent


def toy_site() -> Path:
    """A build with the toy exercise of the judge's tests (tests/fixtures/toy) and its torch-free engine."""
    need_build_tools()
    return _toy_site()


@functools.cache
def judge_seed() -> int:
    """One seed for every judging of the comparisons, local and browser alike: fixed, so that a run is
    reproducible; MINISGL_BROWSER_TEST_SEED=N (or "random") explores other hidden inputs."""
    raw = os.environ.get("MINISGL_BROWSER_TEST_SEED", "20261201")
    seed = random.SystemRandom().randrange(2**31) if raw == "random" else int(raw)
    print(f"\njudge seed for the browser comparisons: {seed}")
    return seed


def node_verdicts(jobs) -> list:
    """``jobs`` (from check_jobs()) judged in Pyodide through the Node runner (mode browser), seed judge_seed()."""
    from browser.node import NodeJob, judge_in_node

    need_layer()
    need_build_tools()
    seed = judge_seed()
    return judge_in_node([NodeJob(slug, src, name, run, seed) for slug, _, src, name, run in jobs], site=_site())
