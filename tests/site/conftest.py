"""The site under test: a real server on 127.0.0.1 and headless Chromium (Debian's) driven by Playwright.

Every page a test opens has all other hosts blocked: a request anywhere but the site fails the test.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from werkzeug.serving import make_server

from tests.site.sitekit import PORTS, Guard, LiveSite, need_bundle, open_context
from tests.support import free_port
from web import create_app


@pytest.fixture(scope="session")
def site() -> Iterator[LiveSite]:
    app = create_app({"TESTING": True, "SESSION_COOKIE_SECURE": False})  # plain http (the default is Secure)
    port = free_port(PORTS)
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield LiveSite(url=f"http://127.0.0.1:{port}", server=server)
    server.shutdown()


@pytest.fixture(scope="session")
def browser(chromium_browser):
    need_bundle()
    return chromium_browser


@pytest.fixture
def guard() -> Iterator[Guard]:
    g = Guard()
    yield g
    assert not g.blocked, f"the page asked other hosts for: {g.blocked}"
    assert not g.errors, f"script errors in the page: {g.errors}"
    assert not g.csp, f"the Content-Security-Policy refused: {g.csp}"


@pytest.fixture
def context(browser, site, guard):
    ctx = open_context(browser, site, guard)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context):
    return context.new_page()
