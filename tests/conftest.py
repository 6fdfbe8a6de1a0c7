"""Fixtures shared by the whole suite (helpers are in tests/support.py)."""

from __future__ import annotations

import shutil

import pytest

from minisgl.env import ENV
from tests.support import CHROMIUM_ARGS, IN_CI, need  # noqa: F401 - IN_CI re-exported for conftest.py files below


@pytest.fixture(autouse=True)
def _overlap_default():
    """Each test starts with overlap scheduling at its default (on) and leaves it so."""
    ENV.DISABLE_OVERLAP_SCHEDULING.value = False
    yield
    ENV.DISABLE_OVERLAP_SCHEDULING.value = False


@pytest.fixture(scope="session")
def qwen3():
    from minisgl.testing import tiny_model

    return tiny_model("qwen3")


@pytest.fixture(scope="session")
def llama():
    from minisgl.testing import tiny_model

    return tiny_model("llama")


@pytest.fixture(scope="session")
def chromium_browser():
    """Debian's chromium through Playwright (never `playwright install`), one for the whole test process: Playwright's
    sync API runs one at a time in a process, so every suite (site, browser judge, grading panel) shares it and
    opens its own contexts."""
    need(shutil.which("chromium") is not None, "Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        yield browser
        browser.close()
