"""The gradebook (web/gradebook.py) on both databases: best verdict, first accepted, attempts, timings, the
filters; the staff page, its CSV and the API agreeing cell for cell; who may see them; the learner's history;
``flask --app web users group``."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from html.parser import HTMLParser

import pytest
from sqlalchemy import select

from web import sessions
from web.deadlines import record_timings
from web.gradebook import Filter, UnknownFilter, gradebook
from web.models import CANCELLED, DONE, QUEUED, Assignment, AssignmentItem, Extension, Submission, User

E1, E2, E3 = "req-lengths", "sampling-params-validate", "base-op-state-dict"  # chapters request-lifecycle, layers
T0 = dt.datetime(2026, 11, 2, 9, 0, 0)


def _day(d: float) -> dt.datetime:
    return T0 + dt.timedelta(days=d)


def _user(s, name: str, group: str = "", staff: bool = False) -> User:
    u = User(username=name, group_name=group, is_staff=staff)
    s.add(u)
    s.flush()
    return u


def _sub(s, user: User, exercise: str, result: str | None, day: float, *, run: bool = False,
         state: str = DONE) -> Submission:
    verdict = json.dumps({"status": result, "passed": 1, "total": 2, "message": "", "tests": [
        {"name": "test_lengths", "doc": "the lengths", "status": "fail", "message": "assert 3 == 4", "output": "",
         "ms": 1, "visible": True}]})
    sub = Submission(user_id=user.id, exercise=exercise, mode="cpu", run_only=run, code=f"# {user.username} {day}",
                     state=state, result=result if state == DONE else None, created_at=_day(day),
                     verdict=verdict if state == DONE else None)
    s.add(sub)
    s.flush()
    record_timings(s, sub)
    return sub


@pytest.fixture
def course(grading):
    """Two assignments sharing E1; alice late on E1 and only trying E2; bob on time; carol in another group."""
    with grading.db.session() as s:
        week1 = Assignment(name="Week 1", opens_at=T0, due_at=_day(7), late_until=_day(9),
                           items=[AssignmentItem(exercise=E2, position=0), AssignmentItem(exercise=E1, position=1)])
        week2 = Assignment(name="Week 2", opens_at=T0, due_at=_day(3),
                           items=[AssignmentItem(exercise=E3, position=0), AssignmentItem(exercise=E1, position=1)])
        s.add_all([week1, week2])
        s.flush()
        alice, bob, carol = _user(s, "alice", "a"), _user(s, "bob", "a"), _user(s, "carol", "b")
        boss = _user(s, "boss", staff=True)
        _sub(s, alice, E1, "accepted", 0.5, run=True)  # run-only: not graded
        _sub(s, alice, E1, "wrong_answer", 1)
        _sub(s, alice, E1, "accepted", 8)  # week 1: late; week 2: after
        _sub(s, alice, E1, "accepted", 10)
        _sub(s, alice, E2, "runtime_error", 2)
        _sub(s, alice, E2, "wrong_answer", 3)
        _sub(s, alice, E3, None, 1, state=QUEUED)
        _sub(s, alice, E3, None, 1.5, state=CANCELLED)
        _sub(s, bob, E1, "accepted", 1)
        _sub(s, bob, E3, "accepted", 1, run=True)
        _sub(s, carol, E3, "accepted", 2)
        _sub(s, boss, E1, "accepted", 1)
        return {"week1": week1.id, "week2": week2.id}


def _compute(app, grading, f: Filter):
    with grading.db.session() as s:
        return gradebook(s, app.extensions["minisgl.catalog"].get(), f)


def test_best_verdict_first_accepted_attempts_and_timings(app, grading, course):
    gb = _compute(app, grading, Filter())
    catalog = app.extensions["minisgl.catalog"].get()
    assert [c.slug for c in gb.columns] == [en.slug for en in catalog.entries]  # every exercise, course order
    assert [r.username for r in gb.rows] == ["alice", "bob", "carol"]  # staff left out
    assert [a.name for a in gb.assignments] == ["Week 2", "Week 1"]  # by due time
    alice, bob, carol = gb.rows
    a1 = alice.cells[E1]
    assert (a1.result, a1.accepted_at, a1.attempts, a1.timing) == ("accepted", _day(8), 3, "after")  # worst of two
    assert (alice.cells[E2].result, alice.cells[E2].attempts, alice.cells[E2].mark) == ("wrong_answer", 2, "tried")
    assert alice.cells[E2].accepted_at is None and alice.cells[E2].timing is None
    assert (alice.cells[E3].mark, alice.cells[E3].attempts) == ("", 0)  # queued and cancelled: not graded
    assert (bob.cells[E1].result, bob.cells[E1].timing, bob.cells[E1].late) == ("accepted", "on_time", False)
    assert (bob.cells[E3].result, bob.cells[E3].attempts) == (None, 0)  # run-only accepted counts for nothing
    assert (carol.cells[E3].accepted_at, carol.cells[E3].timing) == (_day(2), "on_time")
    standings = {r.username: [(st.solved, st.total, st.late) for st in r.standings] for r in gb.rows}
    assert standings == {"alice": [(1, 2, 1), (1, 2, 1)], "bob": [(1, 2, 0), (1, 2, 0)],
                         "carol": [(1, 2, 0), (0, 2, 0)]}



def test_an_on_time_resubmission_after_an_extension_wins_over_a_late_first(app, grading, course):
    """The timing is the best an accepted submission was (as the assignments API says), not the first's."""
    with grading.db.session() as s:
        alice = s.scalar(select(User).where(User.username == "alice"))
        s.add(Extension(assignment_id=course["week1"], user_id=alice.id, due_at=_day(20)))
        s.flush()
        _sub(s, alice, E1, "accepted", 11)  # week 1: on time now (extended); week 2: still after
    gb = _compute(app, grading, Filter(assignment=course["week1"]))
    cell = gb.rows[0].cells[E1]
    assert (cell.accepted_at, cell.timing, cell.late) == (_day(8), "on_time", False)  # the first's time, the best
    assert _compute(app, grading, Filter(assignment=course["week2"])).rows[0].cells[E1].timing == "after"
    assert [(st.solved, st.late) for st in _compute(app, grading, Filter()).rows[0].standings] == [(1, 1), (1, 0)]

def test_filters_by_assignment_chapter_and_group(app, grading, course):
    gb = _compute(app, grading, Filter(assignment=course["week1"]))
    assert [c.slug for c in gb.columns] == [E2, E1]  # the assignment's order
    assert [a.name for a in gb.assignments] == ["Week 1"]
    assert gb.rows[0].cells[E1].timing == "late"  # against week 1 only (week 2 says after)
    gb = _compute(app, grading, Filter(assignment=course["week2"], chapter="layers"))
    assert [c.slug for c in gb.columns] == [E3]
    assert [r.cells[E3].mark for r in gb.rows] == ["", "", "accepted"]
    gb = _compute(app, grading, Filter(chapter="request-lifecycle", group="a"))
    assert [c.slug for c in gb.columns] == [E1, E2]
    assert [r.username for r in gb.rows] == ["alice", "bob"]
    assert _compute(app, grading, Filter(group="nobody")).rows == []
    for f, param in ((Filter(assignment=999), "assignment"), (Filter(chapter="no-such-chapter"), "chapter")):
        with pytest.raises(UnknownFilter) as e:
            _compute(app, grading, f)
        assert e.value.param == param


# ---- the pages, the CSV, the API -----------------------------------------------------------------------------


def _logged_in(app, grading, username: str):
    """A browser with a session of ``username``'s (what the login page leaves in the cookie)."""
    with grading.db.session() as s:
        uid = s.query(User.id).filter(User.username == username).scalar()
    c = app.test_client()
    with c.session_transaction() as sess:
        sess["sid"] = sessions.start_session(grading.db, uid, dt.timedelta(hours=1))
        sess["csrf"] = "x"
    return c


class _Table(HTMLParser):
    """The gradebook table's rows as the CSV would have them, from the cells' data attributes."""

    def __init__(self):
        super().__init__()
        self.exercises, self.rows = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "th" and "data-exercise" in a:
            self.exercises.append(a["data-exercise"])
        elif tag == "tr" and "data-username" in a:
            self.rows.append([a["data-username"], a["data-group"]])
        elif tag == "td" and "data-result" in a:
            self.rows[-1] += [a["data-result"], a["data-attempts"], a["data-accepted-at"], a["data-timing"]]
        elif tag == "td" and "data-solved" in a:
            self.rows[-1] += [a["data-solved"], a["data-late"]]


@pytest.mark.parametrize("query", ["", "?assignment={week1}&group=a"])
def test_page_and_csv_agree_cell_for_cell(app, grading, course, query):
    query = query.format(**course)
    c = _logged_in(app, grading, "boss")
    page = c.get("/staff/gradebook" + query)
    assert page.status_code == 200
    table = _Table()
    table.feed(page.text)
    got = c.get("/staff/gradebook.csv" + query)
    assert got.status_code == 200 and got.mimetype == "text/csv"
    assert "attachment" in got.headers["Content-Disposition"] and got.headers["Cache-Control"] == "no-store"
    lines = list(csv.reader(io.StringIO(got.text)))
    assert lines[1:] == table.rows and len(table.rows) == (2 if query else 3)
    assert [h for h in lines[0] if h in table.exercises] == table.exercises
    alice = dict(zip(lines[0], lines[1]))
    assert (alice[E1], alice[f"{E1} attempts"], alice[f"{E1} accepted at"]) == ("accepted", "3",
                                                                                 "2026-11-10T09:00:00Z")
    assert alice[f"{E1} timing"] == ("late" if query else "after")
    assert (alice["Week 1 solved (of 2)"], alice["Week 1 late"]) == ("1", "1")
    mark = "✓<strong>L</strong>" if query else "✓<strong>A</strong>"  # alice's E1: late for week 1, after week 2
    assert f'class="accepted late" title="accepted, 3 graded, first accepted 2026-11-10T09:00:00Z, ' \
           f'{alice[f"{E1} timing"]}">{mark}</td>' in page.text
    assert f'data-exercise="{E2}" data-result="wrong_answer" data-attempts="2" data-accepted-at="" data-timing="" ' \
           'class="tried" title="wrong_answer, 2 graded">✗</td>' in page.text
    assert 'href="/staff/gradebook.csv' + query.replace("&", "&amp;") + '"' in page.text
    api_csv = c.get("/api/v1/gradebook.csv" + query)
    assert api_csv.text == got.text and api_csv.headers["Cache-Control"] == "no-store"
    body = c.get("/api/v1/gradebook" + query).json
    assert [x["username"] for x in body["learners"]] == [r[0] for r in table.rows]
    assert body["learners"][0]["cells"][E1] == {"result": "accepted", "attempts": 3,
                                                "accepted_at": "2026-11-10T09:00:00Z", "timing": alice[f"{E1} timing"]}
    assert 'href="/staff/gradebook"' in c.get("/staff/").text  # the staff nav links it


def test_only_staff_see_the_gradebook(app, grading, accounts, course):
    learner_token, staff_token = accounts.user("dave"), accounts.user("eve", staff=True)
    anonymous, learner = app.test_client(), _logged_in(app, grading, "alice")
    for path in ("/staff/gradebook", "/staff/gradebook.csv", "/staff/gradebook/alice"):
        r = anonymous.get(path)
        assert r.status_code == 302 and "/login" in r.headers["Location"]
        assert learner.get(path).status_code == 403
    for path in ("/api/v1/gradebook", "/api/v1/gradebook.csv"):
        assert anonymous.get(path).json["error"]["code"] == "unauthorized"
        assert anonymous.get(path).status_code == 401
        assert learner.get(path).status_code == 403
        r = anonymous.get(path, headers={"Authorization": f"Bearer {learner_token}"})
        assert (r.status_code, r.json["error"]["code"]) == (403, "forbidden")
        assert anonymous.get(path, headers={"Authorization": f"Bearer {staff_token}"}).status_code == 200
    # a staff member's token is for the API, not the pages
    assert anonymous.get("/staff/gradebook", headers={"Authorization": f"Bearer {staff_token}"}).status_code == 403


def test_bad_filters_are_clear_errors(app, grading, course):
    c = _logged_in(app, grading, "boss")
    for query, status, code in (("assignment=x", 400, "invalid_parameter"), ("assignment=999", 404, "not_found"),
                                ("chapter=no-such-chapter", 404, "not_found"), ("chapter=Bad!", 400,
                                                                                 "invalid_parameter"),
                                ("group=a&group=b", 400, "invalid_parameter")):
        r = c.get(f"/api/v1/gradebook?{query}")
        assert (r.status_code, r.json["error"]["code"]) == (status, code), query
        assert query.split("=")[0] in r.json["error"]["message"]
    page = c.get("/staff/gradebook?chapter=no-such-chapter")
    assert page.status_code == 400 and "no chapter &#39;no-such-chapter&#39;" in page.text
    assert 'name="chapter"' in page.text  # the form is still there to fix it
    assert c.get("/staff/gradebook.csv?assignment=x").status_code == 400


def test_a_learners_history_shows_every_submission_with_its_code(app, grading, course):
    c = _logged_in(app, grading, "boss")
    page = c.get("/staff/gradebook/alice")
    assert page.status_code == 200
    text = page.text
    assert text.count("<li data-submission=") == 8  # run-only, queued and cancelled ones too
    assert text.index("# alice 10") < text.index("# alice 8") < text.index("# alice 0.5")  # newest first
    assert "Week 1: late" in text and "Week 2: after" in text
    assert "<code>test_lengths</code>" in text and "assert 3 == 4" in text and "<details>" in text
    assert c.get("/staff/gradebook/nobody").status_code == 404
    assert c.get("/staff/gradebook/no%00body").status_code == 404


def test_users_group_sets_and_clears_a_learners_group(app, grading, accounts):
    accounts.user("frank")
    cli = app.test_cli_runner()
    r = cli.invoke(args=["users", "group", "frank", "Section B"])
    assert r.exit_code == 0 and "frank is in group Section B" in r.output
    assert "Section B" in cli.invoke(args=["users", "list"]).output
    with grading.db.session() as s:
        assert s.query(User.group_name).filter(User.username == "frank").scalar() == "Section B"
    assert cli.invoke(args=["users", "group", "frank", "=cmd()"]).exit_code != 0
    assert cli.invoke(args=["users", "group", "nobody", "x"]).exit_code != 0
    assert cli.invoke(args=["users", "group", "frank", ""]).exit_code == 0
    with grading.db.session() as s:
        assert s.query(User.group_name).filter(User.username == "frank").scalar() == ""
