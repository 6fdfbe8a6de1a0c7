"""Fixtures of the browser judge's tests (their helpers are in judge_browser.py beside this file)."""

from __future__ import annotations

import pytest

from tests.browser import judge_browser


@pytest.fixture(scope="module")
def toy_site():
    """A build of the browser judge with the toy exercise (tests/fixtures/toy) and its torch-free engine."""
    return judge_browser.toy_site()
