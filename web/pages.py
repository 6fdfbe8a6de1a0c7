"""The HTML pages: the exercise list (grouped by chapter, filters in the URL) and the exercise page."""

from __future__ import annotations

from flask import Blueprint, abort, current_app, render_template, request, url_for
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from judge.exercise import DIFFICULTIES, SLUG_RE

from . import auth
from .api import MAX_ID, catalog, filters_from_request
from .assignment_ops import open_for
from .config import book_url
from .errors import ApiError
from .grading import get_grading
from .rendering import markdown_html

MODE_NAMES = {"browser": "browser", "local": "local", "gpu": "GPU"}
TIMING_WORDS = {"on_time": "on time", "late": "late, in the late window", "after": "after the deadline"}
PROGRESS_STATUSES = ("", "solved", "tried", "new")  # filtered in the page, from the browser's progress

bp = Blueprint("pages", __name__)


@bp.app_context_processor
def names():
    return {"mode_names": MODE_NAMES, "book_link": book_link, "timing_words": TIMING_WORDS}


@bp.app_template_filter("iso_utc")
def iso_utc(value: str | None) -> str:
    """``2026-12-10T23:59:00.000Z`` as the pages say it: ``2026-12-10 23:59 UTC`` (seconds only when set)."""
    if not value:
        return ""
    day, _, clock = value.removesuffix("Z").partition("T")
    clock = clock.split(".")[0]
    return f"{day} {clock.removesuffix(':00') if clock.count(':') == 2 else clock} UTC"


def book_link(chapter) -> str | None:
    """The address of the book's chapter (``BOOK_URL`` filled in); None when unset or the number is unknown."""
    template = current_app.config["BOOK_URL"]
    if not template or chapter.book is None:
        return None
    return book_url(template, chapter.book, chapter.id)


@bp.get("/")
def index():
    cat = catalog()
    filters = filters_from_request()
    status = request.args.get("status", "")
    if status not in PROGRESS_STATUSES:
        status = ""
    shown_ids = {en.slug for en in cat.filter(filters)}
    return render_template("list.html", catalog=cat, filters=filters, status=status, shown_ids=shown_ids,
                           difficulties=DIFFICULTIES, assignments=_assignments())


def _assignments(exercise: str | None = None) -> list[dict] | None:
    """The open assignments of the learner logged in on this browser (holding ``exercise``, if given), as
    ``assignment_ops.open_for`` gives them; None for a visitor (or a bearer token: pages go by the cookie)."""
    if request.headers.get("Authorization") is not None:
        return None
    try:
        user = auth.current_user()
    except ApiError:
        return None
    if user is None:
        return None
    with get_grading().db.session() as s:
        return open_for(s, user.id, exercise=exercise)


@bp.get("/exercises/")
def exercises():
    return index()


def _numbered(source: str, first: int, anchor: str) -> str:
    """A listing whose lines carry their line numbers in tests.py (``<span id="{anchor}-N">``)."""
    fmt = HtmlFormatter(linespans=anchor, linenos="inline", linenostart=first)  # (nowrap would drop the spans)
    html = highlight(source, PythonLexer(), fmt)
    return html[html.index("<pre>") + len("<pre>"):html.rindex("</pre>")].removeprefix("<span></span>")


@bp.get("/exercises/<slug>")
def exercise(slug: str):
    if len(slug) > MAX_ID or not SLUG_RE.match(slug):
        abort(404, f"no exercise {slug[:MAX_ID]!r}: exercise ids are slugs like graph-capture-buffer")
    cat = catalog()
    entry = cat.by_slug.get(slug)
    if entry is None:
        abort(404, f"no exercise {slug!r}")
    e = entry.exercise
    tests_html = {t.name: _numbered(t.source, t.line, "tests-line") for t in entry.visible_tests}
    page_data = {
        "id": e.slug, "title": e.title, "starter": e.starter, "modes": list(e.modes),
        "targets": [t.spec for t in e.targets], "time_limit": e.time_limit, "test_time_limit": e.test_time_limit,
        "hints": len(e.hints),
        "visible_tests": [{"name": t.name, "first": t.line, "last": t.line + t.source.count("\n")}
                          for t in entry.visible_tests],
        "test_count": {"visible": len(entry.visible_tests), "hidden": entry.hidden_count},
        "urls": {"solution": url_for("api.solution", exercise_id=e.slug), "list": url_for("pages.index")},
    }
    return render_template(
        "exercise.html", entry=entry, tests_html=tests_html, page_data=page_data,
        hints_html=[markdown_html(h) for h in e.hints],
        prev=cat.by_slug.get(entry.prev or ""), next=cat.by_slug.get(entry.next or ""),
        assignments=_assignments(e.slug),
    )
