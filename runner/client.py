"""The runner's side of the runner API (``web/runners.py``), over HTTP(S) with the runner's token.

Transient failures (the site restarting, the database away: connection errors, 5xx, 503) are retried
with a capped exponential backoff; a 401 stops the runner (a wrong or removed token); a 409 means the
lease is lost and is reported as ``LeaseLost``, and so does a 403 ``not_your_lease`` (another runner claimed
the job). A result the site refuses (400 naming the field, 413) or that is not JSON at all (a ``NaN``) is
``ResultRefused``: posting it again would not help, and the lease still holds until it is released.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import requests

VERSION = "minisgl-runner/1"


class Unauthorized(Exception):
    pass


class LeaseLost(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ResultRefused(Exception):
    """The site will never take this result (the message says which field); the job is still ours to release."""


def _error(r: requests.Response) -> dict[str, Any]:
    """The site's JSON error object (``{"error": {"code", "message", ...}}``), or {}."""
    try:
        err = r.json().get("error")
    except (ValueError, AttributeError):
        return {}
    return err if isinstance(err, dict) else {}


class ServerClient:
    def __init__(self, server: str, token: str, *, stop: threading.Event | None = None, timeout: float = 10.0):
        self.base = server.rstrip("/") + "/api/v1/runner"
        self.headers = {"Authorization": f"Bearer {token}", "User-Agent": VERSION}
        self.timeout = timeout
        self.stop = stop or threading.Event()
        self._local = threading.local()

    def _session(self) -> requests.Session:
        # one HTTP session (connection pool) per thread: each slot long-polls on its own connection
        s = getattr(self._local, "s", None)
        if s is None:
            s = self._local.s = requests.Session()
            s.headers.update(self.headers)
        return s

    def _post(self, path: str, body: dict[str, Any], *, timeout: float, retry_for: float | None,
              on_retry=None) -> requests.Response:
        """POST, retrying transient failures for ``retry_for`` seconds (None: until ``stop`` is set; only
        claims are cut short by ``stop``, a result is still delivered while the runner stops)."""
        t0 = time.monotonic()
        delay = 0.25
        while True:
            try:
                try:
                    r = self._session().post(self.base + path, json=body, timeout=timeout)
                except requests.exceptions.InvalidJSONError as e:  # NaN or Infinity: not JSON, never sent
                    raise ResultRefused(f"{path}: the body is not JSON ({e})"[:500]) from None
                if r.status_code == 401:
                    raise Unauthorized(_error(r).get("message", "unauthorized"))
                if r.status_code < 500 and r.status_code != 429:
                    return r
                why = f"HTTP {r.status_code}"
                retry_after = r.headers.get("Retry-After")
                if retry_after and retry_after.isdigit():
                    delay = max(delay, min(float(retry_after), 10.0))
            except requests.RequestException as e:
                why = type(e).__name__
            if on_retry:
                on_retry(why)
            if retry_for is not None and time.monotonic() - t0 + delay > retry_for:
                raise ConnectionError(f"{path}: gave up after {time.monotonic() - t0:.0f} s ({why})")
            pause = delay * (0.75 + random.random() / 2)
            if retry_for is None:
                if self.stop.wait(pause):
                    raise ConnectionError(f"{path}: stopping ({why})")
            else:
                time.sleep(pause)
            delay = min(delay * 2, 10.0)

    def claim(self, modes: list[str], gpu: str | None, wait: float, on_retry=None) -> dict[str, Any] | None:
        r = self._post("/claim", {"modes": modes, "gpu": gpu, "wait": wait, "version": VERSION},
                       timeout=wait + self.timeout, retry_for=None, on_retry=on_retry)
        if r.status_code == 204:
            return None
        r.raise_for_status()
        return r.json()["job"]

    @staticmethod
    def _lease_lost(r: requests.Response) -> None:
        err = _error(r)
        if r.status_code == 409:
            raise LeaseLost(err.get("reason", "lost"))
        if r.status_code == 403 and err.get("code") == "not_your_lease":
            raise LeaseLost("not_your_lease")

    def heartbeat(self, job_id: int, lease_id: str) -> float:
        r = self._post(f"/jobs/{job_id}/heartbeat", {"lease_id": lease_id}, timeout=self.timeout, retry_for=5.0)
        self._lease_lost(r)
        r.raise_for_status()
        return float(r.json()["lease_seconds"])

    def result(self, job_id: int, lease_id: str, verdict: dict[str, Any], judged_on: dict[str, Any],
               retry_for: float, on_retry=None) -> bool:
        """True when stored (now or by an earlier try of ours); LeaseLost when the lease is stale; ResultRefused
        when the site will not take this verdict."""
        r = self._post(f"/jobs/{job_id}/result", {"lease_id": lease_id, "verdict": verdict, "judged_on": judged_on},
                       timeout=self.timeout * 3, retry_for=retry_for, on_retry=on_retry)
        self._lease_lost(r)
        if r.status_code in (400, 413):
            raise ResultRefused(f"HTTP {r.status_code}: {_error(r).get('message', r.text[:300])}"[:500])
        r.raise_for_status()
        return True

    def release(self, job_id: int, lease_id: str, *, failed: bool = False, message: str = "") -> None:
        body = {"lease_id": lease_id, "reason": "failed" if failed else "stopping", "message": message[:500]}
        r = self._post(f"/jobs/{job_id}/release", body, timeout=self.timeout, retry_for=10.0)
        self._lease_lost(r)
        r.raise_for_status()
