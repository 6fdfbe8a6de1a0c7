"""Fixtures shared by the whole suite (helpers are in tests/support.py)."""

from __future__ import annotations

import os
import shutil

# OpenMP's threads wait for the next parallel region by spinning (libgomp's default): with two workers, the servers
# they start and the judges' children on two cores, a spinning thread takes the core another process needs (two
# transformers generate() side by side: 9.5 s each with spinning, 3.0 s passive, 2.8 s alone). Set before any
# process here imports torch; the workers and every process they start inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

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


# The longest files first (in the order of their time on CI's 2 cores), so that the two workers of `make test`
# (`-n 2 --dist loadfile --no-loadscope-reorder`: one file at a time, in collection order) finish together.
LONGEST_FIRST = (
    "test_bank.py",
    "test_bank_browser.py",
    "test_hostile.py",
    "test_sandbox.py",
    "test_faults.py",
    "test_openai_client.py",
    "test_lifecycle.py",
    "test_e2e.py",
    "test_judging_flows.py",
    "test_pages_browser.py",
    "test_chromium_judge.py",
    "test_smollm2.py",
    "test_panel.py",
    "test_node_judge.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the others keep their order


def pytest_collection_finish(session):
    # A thread of ours that parses Python (the site's similarity worker) must not run while pytest rewrites
    # test modules at import: CPython 3.11.7's AST builder is not thread-safe (python/cpython#106905).
    import threading

    parsing = [t.name for t in threading.enumerate() if t.name == "similarity"]
    if parsing:
        raise pytest.UsageError(f"a {parsing[0]} thread ran during collection: create that app in a fixture, "
                                "or with SIMILARITY_SECONDS 0")
