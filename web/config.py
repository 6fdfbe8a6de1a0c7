"""The site's configuration: defaults, then ``MINISGL_PRACTICE_*`` environment variables, then overrides."""

from __future__ import annotations

import json
import os
import string
from collections.abc import Mapping
from typing import Any

PREFIX = "MINISGL_PRACTICE_"

DEFAULTS: dict[str, Any] = {
    "SECRET_KEY": None,  # None: a random key kept in the instance folder (``secret_key``), made on first start
    "EXERCISES_DIR": None,  # None: judge's default ($MINISGL_EXERCISES, else the checkout's exercises/)
    "MAX_QUERY_BYTES": 2048,  # a longer query string is refused with 414 (pages and API alike)
    "BROWSER_SITE": None,  # the built browser assets (browser/build.py); None: .cache/browser/site
    "BROWSER_EXERCISES": None,
    # the book "mini-sglang from Scratch": a chapter's address, with {number} (the book's chapter number) and/or
    # {id} (the course chapter's id), e.g. https://example.org/book/ch{number}/; empty: chapters are not linked
    "BOOK_URL": "",  # the exercises the minimal judge page lists; None: judge's default
    # the grading server (web/grading.py)
    "DATABASE_URL": None,  # None: sqlite:///<instance>/practice.sqlite3 (or the DATABASE_URL variable)
    "LEASE_SECONDS": 60,  # a claimed job's lease; runners renew it every third of it
    "MAX_ATTEMPTS": 3,  # claims before a job ends as internal_error
    "QUEUE_CAP": 200,  # queued submissions site-wide; more get 429
    "MAX_QUEUED_PER_USER": 3,  # one learner's queued submissions; more get 429 (too_many_queued)
    "RATE_LIMIT": 10,  # submissions per user per RATE_WINDOW_SECONDS; more get 429
    "RATE_WINDOW_SECONDS": 60,
    "MAX_CODE_BYTES": 65536,  # a submission's source, UTF-8
    "SSE_HEARTBEAT_SECONDS": 15,  # a comment line on idle event streams
    "STREAMS_PER_USER": 8,  # open event streams one account may have, across all workers; more get 429
    "STREAMS_TOTAL": 1000,  # open event streams site-wide; more get 429 (size: docs/deploy.md)
    "STREAM_RECHECK_SECONDS": 5,  # how often a live stream re-checks its credential (ends when it is gone)
    "CLAIM_WAIT_MAX_SECONDS": 20,  # the longest long-poll a runner may ask for
    "REAPER_SECONDS": 5,  # how often each site process returns expired leases (0: never; the claim does too)
    "SIMILARITY_SECONDS": 5,  # how often each site process compares new accepted submissions (0: never)
    "POLL_SECONDS": 0.5,  # SQLite: how often each process looks for changes made by others
    # accounts (web/auth.py): the session cookie is sent over HTTPS only, except by the embedded default
    # (python -m web, plain http on 127.0.0.1), which turns it off; false to try a deployment over plain http
    "SESSION_COOKIE_SECURE": True,
    "SESSION_DAYS": 14,  # a login lasts this long (then log in again); logout, a password change, users disable end it
    "LOGIN_FAILURES_PER_ACCOUNT": 10,  # wrong passwords per account per LOGIN_WINDOW_SECONDS; more: 429
    "LOGIN_FAILURES_PER_ADDRESS": 100,  # ... and per client address (a class behind one NAT shares one)
    "LOGIN_WINDOW_SECONDS": 900,
    "TRUSTED_PROXIES": 0,  # reverse proxies in front whose X-Forwarded-For/-Proto to believe (compose.yaml: 1)
    "PUBLIC_URL": "",  # the site's address as learners see it (for the links the admin commands print)
    "HSTS_SECONDS": 31536000,  # Strict-Transport-Security's max-age when served over HTTPS (web/headers.py); 0: never
}


def parse(key: str, value: Any, default: Any) -> Any:
    """A value typed like its default: a string (from the environment, or given as one) is read as JSON for
    numbers and booleans (``MINISGL_PRACTICE_LEASE_SECONDS=30``); anything else is kept as it is."""
    if not isinstance(value, str) or default is None or isinstance(default, str):
        return value
    try:
        parsed = json.loads(value.lower() if isinstance(default, bool) else value)
    except ValueError:
        parsed = None
    if isinstance(default, bool) and isinstance(parsed, bool) or not isinstance(default, bool) and \
            isinstance(parsed, int | float) and not isinstance(parsed, bool):
        return parsed
    raise ValueError(f"{PREFIX}{key}: cannot parse {value!r} (expected a value like {default!r})")


def load_config(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> dict:
    env = os.environ if environ is None else environ
    config = dict(DEFAULTS)
    config.update({key[len(PREFIX):]: raw for key, raw in env.items() if key.startswith(PREFIX)})
    config.update(overrides or {})
    for key, default in DEFAULTS.items():
        config[key] = parse(key, config[key], default)
    check_book_url(config["BOOK_URL"])
    return config


def check_book_url(template: Any) -> None:
    """``BOOK_URL`` is empty, or an http(s) address that fills in with ``{number}`` and ``{id}`` alone."""
    where = f"{PREFIX}BOOK_URL"
    if not isinstance(template, str):
        raise ValueError(f"{where}: must be text, got {type(template).__name__}")
    if not template:
        return
    if not template.startswith(("https://", "http://")):
        raise ValueError(f"{where}: {template!r} is not an http(s) address")
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(template) if name is not None]
    except ValueError as e:
        raise ValueError(f"{where}: {template!r} is not a template ({e})") from None
    for name, spec, conv in fields:
        if name not in ("number", "id") or spec or conv:
            field = name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "")
            raise ValueError(f"{where}: {template!r} may hold {{number}} and {{id}} only, not {{{field}}}")


def book_url(template: str, number: int, chapter_id: str) -> str:
    """The address of a book chapter (the template checked by ``check_book_url``)."""
    return template.format(number=number, id=chapter_id)


def instance_secret_key(instance_path: str) -> str:
    """The key kept in ``<instance>/secret_key`` (made once, mode 0600): every worker and restart share it."""
    path = os.path.join(instance_path, "secret_key")
    os.makedirs(instance_path, exist_ok=True)
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(os.urandom(32).hex())
        try:
            os.link(tmp, path)  # atomic: of two processes starting at once, one key wins
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    with open(path, encoding="ascii") as f:
        return f.read().strip()
