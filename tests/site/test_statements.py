"""A statement as the site says it: the closing paragraph about judging from a terminal becomes one about the
page's Run and Submit (the commands stay in "Run locally"); the CLI prints the statement as written."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from judge.exercise import list_exercises
from tests.site.sitekit import ROOT
from web import create_app
from web.catalog import SITE_CLOSING, build_catalog, for_the_site
from web.rendering import markdown_html

EXERCISES = list_exercises()
# a statement "has such a line" when it names the CLI's test command at all (however its lines are broken)
CLI = re.compile(r"practice/judge\.py\s+test\b")
WITH_CLI = [e for e in EXERCISES if CLI.search(e.statement)]
SITE_HTML = markdown_html(SITE_CLOSING).strip()


@pytest.fixture(scope="module")
def catalog():
    return build_catalog(EXERCISES[0].path.parent)


def test_statements_with_the_terminal_paragraph_are_found():
    assert len(WITH_CLI) >= 14 and "req-lengths" in {e.slug for e in WITH_CLI}, [e.slug for e in WITH_CLI]


@pytest.mark.parametrize("exercise", WITH_CLI, ids=lambda e: e.slug)
def test_the_site_says_run_and_submit_instead_of_the_terminal(catalog, exercise):
    html = catalog.by_slug[exercise.slug].statement_html
    assert "judge.py" not in html, html[-600:]
    assert html.rstrip().endswith(SITE_HTML), html[-600:]
    assert html.count(SITE_HTML) == 1
    assert f"python practice/judge.py test {exercise.slug} --run" in exercise.statement  # the file is unchanged


def test_other_statements_are_rendered_as_written(catalog):
    for e in EXERCISES:
        if e in WITH_CLI:
            continue
        body = "\n".join(e.statement.lstrip("\n").splitlines()[1:])  # without the title, as the page does
        assert catalog.by_slug[e.slug].statement_html == markdown_html(body), e.slug


def test_only_a_whole_paragraph_about_this_exercise_is_rewritten():
    line = "Run the visible examples with `python practice/judge.py test {id} --run`, then submit\nwith " \
           "`python practice/judge.py test {id}`."
    ours = line.format(id="req-lengths")
    assert for_the_site(f"Intro.\n\n{ours}\n", "req-lengths") == f"Intro.\n\n{SITE_CLOSING}\n"
    assert for_the_site(f"Intro.\n\n{ours}\n\nMore.\n", "req-lengths") == f"Intro.\n\n{SITE_CLOSING}\n\nMore.\n"
    assert for_the_site(ours, "req-lengths") == SITE_CLOSING
    kept = [
        f"Intro.\n\n{line.format(id='radix-lock')}\n",  # another exercise's commands
        f"Intro.\n\nAs said: {ours}\n",  # inside a longer paragraph
        f"Intro.\n\n{ours} And then more.\n",
        f"```\n{ours}\n```\n",  # a code block's text is never touched
    ]
    for text in kept:
        assert for_the_site(text, "req-lengths") == text, text


def test_the_api_keeps_the_markdown_and_serves_the_sites_html():
    client = create_app({"TESTING": True}).test_client()
    body = client.get("/api/v1/exercises/req-lengths").get_json()
    assert "python practice/judge.py test req-lengths --run" in body["statement"]
    assert "judge.py" not in body["statement_html"] and SITE_HTML in body["statement_html"]
    page = client.get("/exercises/req-lengths").get_data(as_text=True)
    prose = page[page.index('<div class="prose">'):page.index('id="visible-tests"')]
    assert "judge.py" not in prose and SITE_HTML in prose
    local = page[page.index('id="run-locally"'):page.index("download-code")]
    assert "python practice/judge.py test req-lengths --run" in local  # the page keeps the commands here


def test_the_cli_still_prints_the_statement_as_written():
    r = subprocess.run([sys.executable, "practice/judge.py", "show", "req-lengths"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Run the visible examples with `python practice/judge.py test req-lengths --run`" in r.stdout
    assert "Press **Run**" not in r.stdout
