"""Fixtures of the grading-server tests: real databases (SQLite files, a PostgreSQL cluster started here),
the site under gunicorn, runners as processes, the Docker daemon and the CPU job image."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.server.pieces import (
    Accounts,
    PgCluster,
    Site,
    World,
    docker_ok,
    fresh_database,
    have_postgres,
    start_dockerd,
)
from tests.support import need

JOB_IMAGE = os.environ.get("MINISGL_TEST_JOB_IMAGE", "minisgl-job:cpu")


@pytest.fixture(scope="session")
def pg():
    need(have_postgres(), "PostgreSQL is not installed (apt-get install -y postgresql)")
    cluster = PgCluster().start()
    yield cluster
    cluster.destroy()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request):
    return request.param


@pytest.fixture
def db_url(backend, request, tmp_path):
    pg = request.getfixturevalue("pg") if backend == "postgresql" else None
    return fresh_database(backend, pg, tmp_path)


@pytest.fixture
def app(db_url, tmp_path):
    from web import create_app

    app = create_app({"DATABASE_URL": db_url, "TESTING": True, "SECRET_KEY": "test", "REAPER_SECONDS": 0,
                      "SIMILARITY_SECONDS": 0, "SSE_HEARTBEAT_SECONDS": 1, "POLL_SECONDS": 0.1,
                      "SESSION_COOKIE_SECURE": False})  # plain http (the default is Secure)
    app.instance_path = str(tmp_path / "instance")
    yield app
    grading = app.extensions["grading"]
    grading.hub.stop()
    grading.db.dispose()


@pytest.fixture
def grading(app):
    return app.extensions["grading"]


@pytest.fixture
def accounts(grading):
    return Accounts(grading.db)


@pytest.fixture
def site_factory(tmp_path):
    started: list[Site] = []

    def make(db_url: str, **kw) -> Site:
        site = Site(db_url, tmp_path, **kw).start()
        started.append(site)
        return site

    yield make
    for s in started:
        s.kill()


@pytest.fixture(scope="session")
def docker_daemon():
    need(start_dockerd(), "no Docker daemon (apt-get install -y docker.io; dockerd --iptables=false --bridge=none)")
    return True


# `make test` builds the job image in the background beside pytest and writes its exit status here when done
JOB_IMAGE_BUILD = os.environ.get("MINISGL_TEST_JOB_IMAGE_BUILD")
JOB_IMAGE_WAIT_S = 1200.0


@pytest.fixture(scope="session")
def job_image(docker_daemon):
    """The CPU job image (docker/build.py: debootstrap base, host wheels), waited for where `make test` builds it."""
    import docker

    if JOB_IMAGE_BUILD:
        status = Path(JOB_IMAGE_BUILD)
        deadline = time.monotonic() + JOB_IMAGE_WAIT_S
        while not status.exists():
            assert time.monotonic() < deadline, f"the job image's build did not end within {JOB_IMAGE_WAIT_S:g} s"
            time.sleep(1)
        time.sleep(0.2)  # the status is written in one go, but give the writer its moment
        log = status.with_suffix(".log")
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        assert status.read_text().strip() == "0", f"the job image's build failed:\n{tail}"
    try:
        docker.from_env().images.get(JOB_IMAGE)
    except docker.errors.ImageNotFound:
        need(False, f"the job image {JOB_IMAGE} is missing: python docker/build.py job --offline")
    return JOB_IMAGE


@pytest.fixture(scope="session")
def docker_client(docker_daemon):
    import docker

    assert docker_ok()
    return docker.from_env(timeout=120)


@pytest.fixture
def job_dir(tmp_path) -> Path:
    d = tmp_path / "jobs"
    d.mkdir()
    return d


@pytest.fixture
def world_factory(site_factory):
    made: list[World] = []

    def make(url, **kw):
        w = World(url, site_factory, **kw)
        made.append(w)
        return w

    yield make
    for w in made:
        w.db.dispose()
