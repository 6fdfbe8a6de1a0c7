"""Fixtures shared by the whole suite (helpers are in tests/support.py)."""

from __future__ import annotations

import pytest

from minisgl.env import ENV
from tests.support import IN_CI, need  # noqa: F401 - re-exported for conftest.py files below that use them


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
