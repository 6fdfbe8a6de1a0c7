"""The schema is Alembic's: upgrade and downgrade on both databases, the models agree with the migrations,
and a site on a database that is behind says what to run instead of failing."""

from __future__ import annotations

import uuid

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from web import db as dbm
from web.models import Base

TABLES = {"users", "api_tokens", "invites", "runners", "submissions", "settings", "sessions", "login_failures",
          "event_streams", "assignments", "assignment_items", "extensions", "submission_timings", "workspaces",
          "similarity_pairs", "similarity_marks", "alembic_version"}


def _empty_url(backend, request, tmp_path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / f'{uuid.uuid4().hex}.sqlite3'}"
    return request.getfixturevalue("pg").create_database()


def test_upgrade_downgrade_upgrade_and_the_models_match(backend, request, tmp_path):
    url = _empty_url(backend, request, tmp_path)
    dbm.upgrade(url)
    db = dbm.open_database(url)
    try:
        assert dbm.current_revision(db) == dbm.head_revision()
        assert set(inspect(db.engine).get_table_names()) == TABLES
        with db.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert diff == [], diff  # a model change without a migration fails here
        dbm.downgrade(url, "base")
        assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
        dbm.upgrade(url)
        assert dbm.current_revision(db) == dbm.head_revision()
    finally:
        db.dispose()


def test_sqlite_is_in_wal_mode(tmp_path):
    url = f"sqlite:///{tmp_path / 'w.sqlite3'}"
    dbm.upgrade(url)
    db = dbm.open_database(url)
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    db.dispose()


def test_a_site_on_an_unmigrated_database_answers_503_saying_what_to_run(backend, request, tmp_path):
    from web import create_app

    url = _empty_url(backend, request, tmp_path)
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "x"})
    r = app.test_client().get("/api/v1/grading")
    assert r.status_code == 503 and r.json["error"]["code"] == "database_not_migrated"
    assert "flask --app web db upgrade" in r.json["error"]["message"]
    app.extensions["grading"].db.dispose()


def test_the_default_database_is_sqlite_in_the_instance_folder_and_migrated_at_start(tmp_path, monkeypatch):
    from web import create_app

    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("MINISGL_PRACTICE_DATABASE_URL", raising=False)
    import flask

    monkeypatch.setattr(flask.Flask, "auto_find_instance_path", lambda self: str(tmp_path / "instance"))
    app = create_app()
    assert app.extensions["grading"].db.url == f"sqlite:///{tmp_path / 'instance' / 'practice.sqlite3'}"
    assert app.test_client().get("/api/v1/grading").status_code == 200
    assert (tmp_path / "instance" / "secret_key").read_text() == app.config["SECRET_KEY"]
    assert oct((tmp_path / "instance" / "secret_key").stat().st_mode & 0o777) == "0o600"
    app.extensions["grading"].db.dispose()
