"""The grading server's database: SQLAlchemy 2, SQLite by default, PostgreSQL when ``DATABASE_URL`` says so.

- SQLite: a file in the instance folder (``instance/practice.sqlite3``), WAL journal, a busy timeout, and
  transactions that take the write lock at once (``BEGIN IMMEDIATE``) when asked: that is what makes a
  claim atomic there.
- PostgreSQL: ``postgresql://`` URLs use psycopg 3; connections are checked before use, so the site
  recovers by itself after the database was unreachable.

The schema is owned by Alembic (``web/migrations``): ``flask --app web db upgrade`` applies it, and the site
refuses to serve the queue on a database that is behind (a clear message, not a 500 on the first query).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def utcnow() -> dt.datetime:
    """Naive UTC (both backends store it the same way)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def normalize_url(url: str) -> str:
    """``postgres://`` and ``postgresql://`` mean psycopg 3; anything else is kept as it is."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def default_url(instance_path: str | os.PathLike) -> str:
    path = Path(instance_path) / "practice.sqlite3"
    return f"sqlite:///{path}"


@dataclass
class Database:
    url: str
    engine: Engine
    sessions: sessionmaker[Session]

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name  # "sqlite" | "postgresql"

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @contextlib.contextmanager
    def session(self, *, write_lock: bool = False) -> Iterator[Session]:
        """A unit of work, committed at the end (rolled back on error).

        ``write_lock``: on SQLite the transaction starts with ``BEGIN IMMEDIATE`` (the write lock is taken
        before the first read, so read-then-update cannot interleave with another writer). PostgreSQL needs
        no such thing: callers lock rows (``FOR UPDATE SKIP LOCKED``) or update conditionally.
        """
        s = self.sessions()
        try:
            if write_lock and self.is_sqlite:
                s.connection(execution_options={"sqlite_immediate": True})
            yield s
            s.commit()
        except BaseException:
            s.rollback()
            raise
        finally:
            s.close()

    def dispose(self) -> None:
        self.engine.dispose()


def open_database(url: str, *, pool_size: int = 10) -> Database:
    url = normalize_url(url)
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        if u.database and u.database != ":memory:":
            Path(u.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False},
                               pool_size=pool_size, max_overflow=20, pool_timeout=30)
        _sqlite_setup(engine)
    elif u.get_backend_name() == "postgresql":
        engine = create_engine(url, pool_pre_ping=True, pool_size=pool_size, max_overflow=20, pool_timeout=10,
                               connect_args={"connect_timeout": 5}, pool_recycle=1800)
    else:
        raise ValueError(f"DATABASE_URL: unsupported database {u.get_backend_name()!r} (use sqlite:/// or postgresql://)")
    return Database(url=url, engine=engine, sessions=sessionmaker(engine, expire_on_commit=False))


def _sqlite_setup(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # the driver's own BEGIN is off: we issue it below
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def on_begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("sqlite_immediate") else "BEGIN")


# --- migrations ----------------------------------------------------------------------------------------------


def alembic_config(url: str):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", normalize_url(url).replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def current_revision(db: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
