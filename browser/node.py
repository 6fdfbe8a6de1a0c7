"""Judge in Pyodide from Python, through the Node runner (``browser/js/node-runner.mjs``).

The runner boots Pyodide on the very files the site serves (built by ``python -m browser.build``) and
drives it with the page's own supervisor: the same deadlines, interrupts and worker restarts as in a browser.
This module only starts ``node`` on those files and reads its JSON lines; it imports nothing of ``web``.

    verdicts = judge_in_node([NodeJob("graph-bs-list", source)])
    value = exec_in_node("import numpy; RESULT = numpy.__version__")
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from judge.exercise import REPO_ROOT
from judge.verdict import Verdict

RUNNER = Path(__file__).resolve().parent / "js" / "node-runner.mjs"


class NodeRunnerError(Exception):
    """The runner could not judge at all (no node, no built site, Pyodide failed to start); the message says why."""


def default_site() -> Path:
    """``$MINISGL_BROWSER_SITE``, else the build's default output ``.cache/browser/site``."""
    env = os.environ.get("MINISGL_BROWSER_SITE")
    return Path(env) if env else REPO_ROOT / ".cache" / "browser" / "site"


def node_missing() -> str | None:
    """Why the Node runner cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (apt-get install nodejs)"
    if not RUNNER.is_file():
        return f"{RUNNER} is missing"
    return None


@dataclass
class NodeJob:
    exercise: str
    source: str | None  # None: the reference solution
    filename: str = "submission.py"
    run_only: bool = False
    seed: int | None = None


@dataclass
class NodeRun:
    """What one runner process reported."""

    ready: dict = field(default_factory=dict)  # {"ms", "env", "build"}
    results: list[dict] = field(default_factory=list)  # per job: the runner's message (result / value / error)
    progress: list[dict] = field(default_factory=list)  # with progress=True: boot and test progress, in order
    stderr: str = ""


def run_node(jobs: list[dict], *, site: Path | None = None, mounts: list[tuple[str, str]] = (),
             env: dict[str, str] | None = None, sys_path: list[str] = (), timeout: float = 1800,
             grace_ms: int | None = None, progress: bool = False) -> NodeRun:
    """Run raw runner jobs (judge jobs or {"exec": code}) in one runner process."""
    why = node_missing()
    if why:
        raise NodeRunnerError(why)
    site = Path(site) if site else default_site()
    if not (site / "manifest.json").is_file():
        raise NodeRunnerError(f"no browser build at {site} (run `make browser` or `python -m browser.build`)")
    request: dict[str, Any] = {"site": str(site), "jobs": jobs, "mounts": [list(m) for m in mounts],
                               "env": env or {}, "sys_path": list(sys_path), "progress": progress}
    if grace_ms is not None:
        request["grace_ms"] = grace_ms
    with tempfile.TemporaryFile("w+") as err:
        try:
            proc = subprocess.run(["node", str(RUNNER)], input=json.dumps(request), stdout=subprocess.PIPE,
                                  stderr=err, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise NodeRunnerError(f"the Node runner ran past {timeout:g} s") from None
        err.seek(0)
        stderr = err.read()[-20000:]
    run = NodeRun(stderr=stderr)
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("type") == "ready":
            run.ready = msg
        elif msg.get("type") == "progress":
            run.progress.append(msg)
        elif msg.get("index", -1) >= 0:
            run.results.append(msg)
        elif msg.get("type") == "error":
            raise NodeRunnerError(f"the Node runner could not start Pyodide: {msg.get('message')}\n{stderr[-2000:]}")
    if len(run.results) != len(jobs):
        raise NodeRunnerError(f"the Node runner answered {len(run.results)} of {len(jobs)} jobs "
                              f"(exit {proc.returncode})\n{stderr[-3000:]}")
    return run


def judge_in_node(jobs: list[NodeJob], *, exercises: Path | None = None, **kw: Any) -> list[Verdict]:
    """Judge each job in Pyodide (mode ``browser``); ``exercises`` mounts a host exercises folder over the build's."""
    mounts = list(kw.pop("mounts", []))
    env = dict(kw.pop("env", None) or {})
    if exercises is not None:
        mounts.append((str(Path(exercises).resolve()), "/host-exercises"))
        env["MINISGL_EXERCISES"] = "/host-exercises"
    run = run_node([asdict(j) for j in jobs], mounts=mounts, env=env, **kw)
    out = []
    for job, msg in zip(jobs, run.results):
        if msg["type"] != "result":
            raise NodeRunnerError(f"{job.exercise}: {msg.get('message')}")
        out.append(Verdict.from_dict(msg["verdict"]))
    return out


def exec_in_node(code: str, **kw: Any) -> Any:
    """Run Python code in Pyodide; returns the JSON value of its global ``RESULT``."""
    msg = run_node([{"exec": code}], **kw).results[0]
    if msg["type"] != "value":
        raise NodeRunnerError(f"the code failed in Pyodide: {msg.get('message')}")
    return msg["value"]
