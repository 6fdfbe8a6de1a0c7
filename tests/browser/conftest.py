"""Fixtures of the browser judge's tests: the built assets, a toy build, Chromium (Debian's, through Playwright)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from judge_browser import (
    CHROMIUM_ARGS,
    REPO,
    TOY,
    build_browser,
    check_jobs,
    chromium_path,
    need,
    need_layer,
    python312,
)


def _need_build_tools() -> None:
    need(shutil.which("node") is not None, "node is not installed (apt-get install nodejs npm)")
    need(shutil.which("npm") is not None, "npm is not installed (apt-get install npm)")
    need(python312() is not None, "no Python >= 3.12 for `pyodide lockfile add-wheels` (pyenv install 3.12)")


@pytest.fixture(scope="session")
def site() -> Path:
    """The site's own build (tools/build_browser.py, incremental): the real exercises."""
    _need_build_tools()
    return build_browser.build(quiet=True).parent


@pytest.fixture(scope="session")
def toy_site(tmp_path_factory) -> Path:
    """A build with the toy exercise of the judge's tests (tests/fixtures/toy) and its torch-free engine."""
    _need_build_tools()
    out = tmp_path_factory.mktemp("toy-site")
    return build_browser.build(out, TOY / "exercises", [TOY / "toyengine"], quiet=True).parent


@pytest.fixture(scope="session")
def chromium():
    need(chromium_path() is not None, "chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def judge_seed() -> int:
    """One seed for every judging of a session, local and browser alike (printed, to reproduce a failure)."""
    import random

    seed = random.SystemRandom().randrange(2**31)
    print(f"\njudge seed for the browser comparisons: {seed}")
    return seed


@pytest.fixture(scope="session")
def local_verdicts(judge_seed):
    """What `practice/judge.py test --seed S` gives for each job of check_jobs(): isolated children, mode local."""
    need_layer()
    from judge.exercise import find_exercise
    from judge.isolation import Job, judge_batch

    jobs = check_jobs()
    return jobs, judge_batch([Job(find_exercise(slug, REPO / "exercises"), src, name, "local", run_only=run,
                                  seed=judge_seed) for slug, _, src, name, run in jobs])
