"""``practice/judge.py submit ID [FILE] --server URL``: judge on a course's grading server (a GPU runner).

Standard library only. The token comes from ``--token``, ``MINISGL_PRACTICE_TOKEN`` or ``--token-file``
(make one on the site's Account page); the server from ``--server`` or ``MINISGL_PRACTICE_SERVER``. The
submission's live status (queued with position, running, done) is followed over Server-Sent Events; the
verdict is printed like ``test`` prints it. Exit status: 0 accepted, 1 any other verdict, 2 an error.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .modes import submission_mode
from .verdict import Verdict


class RemoteError(Exception):
    pass


def _request(method: str, url: str, token: str, body: dict | None = None, timeout: float = 30.0):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json"})
    try:
        return urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 - the user's own server
    except urllib.error.HTTPError as e:
        try:
            err = json.loads(e.read().decode("utf-8", "replace"))["error"]
            msg = f"{err.get('code')}: {err.get('message')}"
        except (ValueError, KeyError, TypeError, AttributeError):
            msg = e.reason
        retry = e.headers.get("Retry-After")
        raise RemoteError(f"HTTP {e.code} {msg}" + (f" (retry after {retry} s)" if retry else "")) from None
    except urllib.error.URLError as e:
        raise RemoteError(f"cannot reach {url}: {e.reason}") from None


def submit(server: str, token: str, exercise: str, code: str, mode: str = "gpu", run: bool = False) -> dict[str, Any]:
    """Post a submission judged in ``mode`` (``local`` | ``gpu``, the judge's words); the new submission."""
    with _request("POST", f"{server}/api/v1/submissions", token,
                  {"exercise": exercise, "code": code, "mode": submission_mode(mode), "run": run}) as r:
        return json.loads(r.read())


def follow(server: str, token: str, sub: dict[str, Any], on_status) -> dict[str, Any]:
    """Read the submission's event stream until done or cancelled; returns the final submission."""
    with _request("GET", f"{server}{sub['links']['events']}", token, timeout=120) as r:
        last = sub
        for raw in r:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("data: "):
                last = json.loads(line[6:])
                on_status(last)
                if last["status"] in ("done", "cancelled"):
                    return last
    with _request("GET", f"{server}{sub['links']['self']}", token) as r:  # the stream ended early: ask once
        return json.loads(r.read())


def cmd_submit(args) -> int:
    from .exercise import find_exercise
    from .report import format_verdict, style_for
    from .workspace import shown, workspace_dir

    server = (args.server or os.environ.get("MINISGL_PRACTICE_SERVER") or "").rstrip("/")
    token = args.token or os.environ.get("MINISGL_PRACTICE_TOKEN")
    if args.token_file:
        token = Path(args.token_file).read_text().strip()
    if not server or not token:
        print("submit needs --server URL and a token (--token, --token-file or MINISGL_PRACTICE_TOKEN; make one "
              "on the site's Account page)", file=sys.stderr)
        return 2
    if args.mode == "cpu":  # the server's word, which this command took before it spoke the judge's
        print("note: --mode cpu is now --mode local (the same words as `test`); judging in mode local",
              file=sys.stderr)
        args.mode = "local"
    e = find_exercise(args.id, args.exercises)
    path = Path(args.file) if args.file else workspace_dir() / f"{e.slug}.py"
    if not path.is_file():
        print(f"no such file: {shown(path)}", file=sys.stderr)
        return 2

    said: list[tuple] = []

    def status(sub: dict[str, Any]) -> None:
        key = (sub["status"], sub.get("position"))
        if args.json or (said and said[-1] == key):
            return
        said.append(key)
        if sub["status"] == "queued":
            print(f"  queued (position {sub['position']})", file=sys.stderr)
        elif sub["status"] == "running":
            print(f"  running on {sub.get('runner') or 'a runner'}", file=sys.stderr)

    try:
        sub = submit(server, token, e.slug, path.read_text(encoding="utf-8"), args.mode, args.run)
        if not args.json:
            print(f"submission {sub['id']} to {server}", file=sys.stderr)
        status(sub)
        final = follow(server, token, sub, status) if sub["status"] not in ("done", "cancelled") else sub
    except RemoteError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if final["status"] == "cancelled" or not final.get("verdict"):
        print(f"submission {final['id']} was {final['status']}", file=sys.stderr)
        return 1
    v = Verdict.from_dict(final["verdict"])
    if args.json:
        print(json.dumps(final))
    else:
        on = final.get("judged_on") or {}
        print(format_verdict(v, style_for(sys.stdout)))
        where = on.get("gpu") or ("CPU, emulated CUDA graphs" if on.get("emulated") else on.get("device", ""))
        print(f"(judged by {on.get('runner', '?')}: {where})")
    return 0 if v.accepted else 1


def add_parser(sub) -> None:
    p = sub.add_parser("submit", help="judge on a grading server (exit 0 only when accepted)")
    p.add_argument("id")
    p.add_argument("file", nargs="?", help="the submission (default: practice/workspace/ID.py)")
    p.add_argument("--server", help="the site, e.g. https://practice.example.edu (or MINISGL_PRACTICE_SERVER)")
    p.add_argument("--token", help="your API token (better: MINISGL_PRACTICE_TOKEN or --token-file)")
    p.add_argument("--token-file")
    p.add_argument("--mode", choices=["local", "gpu", "cpu"], default="gpu", metavar="{local,gpu}",
                   help="judged on a runner's GPU (default) or its CPU (local); cpu: the old name of local")
    p.add_argument("--run", action="store_true", help="only the visible test_example* tests")
    p.add_argument("--json", action="store_true", help="print only the submission with its verdict, as JSON")
    p.set_defaults(fn=cmd_submit)
