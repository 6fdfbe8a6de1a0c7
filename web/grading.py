"""The grading server inside the site: the database, the queue, its change hub, the reaper, the similarity worker.

``init_grading(app)`` (called by ``create_app``) opens the database named by ``DATABASE_URL`` (the
environment variable, or ``MINISGL_PRACTICE_DATABASE_URL``; default: SQLite in the instance folder),
the queue and its change hub, and keeps them in ``app.extensions["grading"]``; ``get_grading()`` is the one
way to reach them (``ready_grading()`` also checks that the database is migrated). It imports no views:
``create_app`` registers the blueprints and the admin commands.

The default SQLite database is migrated at start-up (the embedded default needs no step); any other
database is migrated by ``flask --app web db upgrade``, and until then the queue's endpoints answer 503
saying so.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from flask import Flask, current_app
from werkzeug.routing import IntegerConverter

from . import db as dbm
from .errors import ApiError
from .notify import Hub
from .queue import Queue, QueueConfig
from .slots import Slots
from .watch import Board

log = logging.getLogger(__name__)

@dataclass
class Grading:
    db: dbm.Database
    queue: Queue
    hub: Hub
    board: Board
    slots: Slots
    schema_ok: bool = False
    _reaper: threading.Thread | None = field(default=None, repr=False)
    _similarity: threading.Thread | None = field(default=None, repr=False)
    _similarity_stop: threading.Event = field(default_factory=threading.Event, repr=False)

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

    def start_similarity(self, interval: float, catalogs) -> None:
        """The similarity worker: every ``interval`` s, compare the new accepted submissions (web/similarity.py)
        against the exercises of ``catalogs`` (the app's CatalogCache)."""
        if interval <= 0 or self._similarity is not None:
            return
        from .similarity import process_pending

        def loop():
            stop = self._similarity_stop
            while not stop.wait(interval):
                try:
                    while process_pending(self.db, catalogs.get(), limit=20) == 20 and not stop.is_set():
                        pass  # a backlog: the next twenty at once
                except Exception as e:  # noqa: BLE001 - the database may be away; try again next time
                    log.debug("similarity: %s", e)

        self._similarity = threading.Thread(target=loop, name="similarity", daemon=True)
        self._similarity.start()

    def stop_similarity(self, timeout: float = 10) -> None:
        """End the similarity worker (after the submission it is comparing, if any)."""
        self._similarity_stop.set()
        if self._similarity is not None:
            self._similarity.join(timeout)


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


def init_grading(app: Flask) -> Grading:
    url = database_url(app)
    if not (app.config.get("DATABASE_URL") or os.environ.get("DATABASE_URL")):
        _migrate_default(app, url)
    db = dbm.open_database(url)
    hub = Hub(db, poll_s=float(app.config["POLL_SECONDS"]))
    grading = Grading(db=db, queue=Queue(db, QueueConfig.from_app_config(app.config), hub), hub=hub,
                      board=Board(db, hub), slots=Slots(db, int(app.config["STREAMS_PER_USER"]),
                                                        int(app.config["STREAMS_TOTAL"])))
    app.extensions["grading"] = grading
    app.config["SESSION_COOKIE_SAMESITE"] = "Lax"
    app.config["SESSION_COOKIE_SECURE"] = bool(app.config["SESSION_COOKIE_SECURE"])
    app.config["SESSION_COOKIE_NAME"] = "practice_session"
    app.config["PERMANENT_SESSION_LIFETIME"] = dt.timedelta(days=float(app.config["SESSION_DAYS"]))
    app.url_map.converters["rowid"] = RowId

    @app.before_request
    def _start_background():
        grading.start_reaper(float(app.config["REAPER_SECONDS"]))
        grading.start_similarity(float(app.config["SIMILARITY_SECONDS"]), app.extensions["minisgl.catalog"])

    return grading


def get_grading(app: Flask | None = None) -> Grading:
    """The grading service of ``app`` (default: the current app)."""
    return (app or current_app).extensions["grading"]


def ready_grading() -> Grading:
    """The current app's grading service, once its database schema is known to be current (else a 503)."""
    grading = get_grading()
    grading.check_schema()
    return grading
