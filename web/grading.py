"""The grading server inside the site: the database, the queue, its change hub and the reaper.

``init_grading(app)`` (called by ``create_app``) opens the database named by ``DATABASE_URL`` (the
environment variable, or ``MINISGL_PRACTICE_DATABASE_URL``; default: SQLite in the instance folder),
registers the blueprints (accounts, learner API, runner API, staff page) and the admin commands.

The default SQLite database is migrated at start-up (the embedded default needs no step); any other
database is migrated by ``flask --app web db upgrade``, and until then the queue's endpoints answer 503
saying so.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from flask import Flask
from werkzeug.routing import IntegerConverter

from . import db as dbm
from .apierror import ApiError, register_error_handlers
from .notify import Hub
from .queue import Queue, QueueConfig
from .watch import Board

log = logging.getLogger(__name__)

DEFAULTS = {
    "DATABASE_URL": None,  # None: sqlite:///<instance>/practice.sqlite3 (or the DATABASE_URL variable)
    "LEASE_SECONDS": 60,  # a claimed job's lease; runners renew it every third of it
    "MAX_ATTEMPTS": 3,  # claims before a job ends as internal_error
    "QUEUE_CAP": 200,  # queued submissions site-wide; more get 429
    "RATE_LIMIT": 10,  # submissions per user per RATE_WINDOW_SECONDS; more get 429
    "RATE_WINDOW_SECONDS": 60,
    "MAX_CODE_BYTES": 65536,  # a submission's source, UTF-8
    "SSE_HEARTBEAT_SECONDS": 15,  # a comment line on idle event streams
    "CLAIM_WAIT_MAX_SECONDS": 20,  # the longest long-poll a runner may ask for
    "REAPER_SECONDS": 5,  # how often each site process returns expired leases (0: never; the claim does too)
    "POLL_SECONDS": 0.5,  # SQLite: how often each process looks for changes made by others
    "SESSION_COOKIE_SECURE": False,  # set to true behind HTTPS
    "PUBLIC_URL": "",  # the site's address as learners see it (for the links the admin commands print)
}


@dataclass
class Grading:
    db: dbm.Database
    queue: Queue
    hub: Hub
    board: Board
    schema_ok: bool = False
    _reaper: threading.Thread | None = field(default=None, repr=False)

    def check_schema(self) -> None:
        if not self.schema_ok:
            current = dbm.current_revision(self.db)
            if current != dbm.head_revision():
                raise ApiError(503, "database_not_migrated",
                               f"The database schema is at {current or 'nothing'}, the site needs "
                               f"{dbm.head_revision()}: run 'flask --app web db upgrade'.", retry_after=60)
            self.schema_ok = True

    def start_reaper(self, interval: float) -> None:
        if interval <= 0 or self._reaper is not None:
            return

        def loop():
            stop = threading.Event()
            while not stop.wait(interval):
                try:
                    self.queue.reap()
                except Exception as e:  # noqa: BLE001 - the database may be away; try again next time
                    log.debug("reaper: %s", e)

        self._reaper = threading.Thread(target=loop, name="queue-reaper", daemon=True)
        self._reaper.start()


def database_url(app: Flask) -> str:
    url = app.config.get("DATABASE_URL") or os.environ.get("DATABASE_URL")
    return url or dbm.default_url(app.instance_path)


def _migrate_default(app: Flask, url: str) -> None:
    """Upgrade the default SQLite database at start-up, one process at a time."""
    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    with open(Path(app.instance_path) / ".migrate.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        dbm.upgrade(url)


class RowId(IntegerConverter):
    """A row id in a URL: 1 to 2**31 - 1 (anything else is a 404, not an overflow in the database)."""

    def __init__(self, url_map, *args, **kw):
        super().__init__(url_map, min=1, max=2**31 - 1)


def _typed(key: str, value, default):
    """An environment value (a string) typed like its default: ``MINISGL_PRACTICE_LEASE_SECONDS=30``."""
    if not isinstance(value, str) or default is None or isinstance(default, str):
        return value
    try:
        parsed = json.loads(value.lower() if isinstance(default, bool) else value)
    except ValueError:
        parsed = None
    if isinstance(default, bool) and isinstance(parsed, bool) or not isinstance(default, bool) and \
            isinstance(parsed, int | float) and not isinstance(parsed, bool):
        return parsed
    raise ValueError(f"MINISGL_PRACTICE_{key}: cannot parse {value!r} (expected a value like {default!r})")


def init_grading(app: Flask) -> Grading:
    for key, default in DEFAULTS.items():
        app.config[key] = _typed(key, app.config.get(key, default), default)
    url = database_url(app)
    if not (app.config.get("DATABASE_URL") or os.environ.get("DATABASE_URL")):
        _migrate_default(app, url)
    db = dbm.open_database(url)
    hub = Hub(db, poll_s=float(app.config["POLL_SECONDS"]))
    grading = Grading(db=db, queue=Queue(db, QueueConfig.from_app_config(app.config), hub), hub=hub,
                      board=Board(db, hub))
    app.extensions["grading"] = grading
    app.config["SESSION_COOKIE_SAMESITE"] = "Lax"
    app.config["SESSION_COOKIE_SECURE"] = bool(app.config["SESSION_COOKIE_SECURE"])
    app.config["SESSION_COOKIE_NAME"] = "practice_session"
    register_error_handlers(app)
    app.url_map.converters["rowid"] = RowId

    from .accounts import bp as accounts_bp
    from .admin import register_commands
    from .runners import bp as runners_bp
    from .staff import bp as staff_bp
    from .submissions import bp as submissions_bp

    for bp in (accounts_bp, submissions_bp, runners_bp, staff_bp):
        app.register_blueprint(bp)
    register_commands(app)

    @app.before_request
    def _start_background():
        grading.start_reaper(float(app.config["REAPER_SECONDS"]))

    return grading


def get_grading(app: Flask) -> Grading:
    return app.extensions["grading"]
