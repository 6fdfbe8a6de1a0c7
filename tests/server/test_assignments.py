"""Assignments: the window and timing rules, the API on both databases (CRUD, validation, 401/403), the timings a
submission records, what a learner sees on the list and exercise pages, the staff pages' forms, the admin
commands. In a browser, staff typing an assignment in and learners seeing it: tests/server/test_course_flow.py."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from web import assignment_ops as ops
from web.deadlines import window
from web.models import AFTER, LATE, ON_TIME, Assignment, Extension

EX, EX2 = "graph-capture-loop", "graph-capture-buffer"
T0 = dt.datetime(2026, 12, 1, 9, 0)
US = dt.timedelta(microseconds=1)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def iso(t: dt.datetime) -> str:
    return t.isoformat() + "Z"


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def _logged_in(app, username: str, password: str):
    c = app.test_client()
    page = c.get("/login")
    r = c.post("/login", data={"username": username, "password": password, "csrf_token": _csrf(page.text)})
    assert r.status_code == 302, r.text
    return c


# ---- the rules -----------------------------------------------------------------------------------------------


def test_window_timing_boundaries_and_an_extension_moving_the_late_window():
    a = Assignment(name="w", opens_at=T0, due_at=T0 + dt.timedelta(days=7), late_until=T0 + dt.timedelta(days=9))
    w = window(a)
    assert [w.timing(t) for t in (T0, a.due_at, a.due_at + US, a.late_until, a.late_until + US)] == \
        [ON_TIME, ON_TIME, LATE, LATE, AFTER]  # exactly at due: on time; exactly at late_until: late
    ext = Extension(due_at=a.due_at + dt.timedelta(days=3))
    we = window(a, ext)
    assert (we.opens_at, we.due_at, we.late_until) == (T0, ext.due_at, ext.due_at + dt.timedelta(days=2))
    assert [we.timing(t) for t in (a.late_until + US, ext.due_at, ext.due_at + US, we.late_until,
                                   we.late_until + US)] == [ON_TIME, ON_TIME, LATE, LATE, AFTER]
    strict = Assignment(name="s", opens_at=T0, due_at=T0 + dt.timedelta(days=1), late_until=None)
    assert [window(strict).timing(t) for t in (strict.due_at, strict.due_at + US)] == [ON_TIME, AFTER]
    assert window(strict, Extension(due_at=strict.due_at + dt.timedelta(hours=5))).late_until is None


def test_times_are_read_as_utc_and_dates_checked():
    assert ops.parse_time("2026-12-01T10:00:00Z", "due_at") == dt.datetime(2026, 12, 1, 10)
    assert ops.parse_time("2026-12-01T12:30:00+02:00", "due_at") == dt.datetime(2026, 12, 1, 10, 30)
    assert ops.parse_time("2026-12-01T10:00", "due_at") == dt.datetime(2026, 12, 1, 10)  # a form's: UTC
    for bad in ("tomorrow", "2026-12-01", "2026-13-01T10:00Z", 5, None, "x" * 100):
        with pytest.raises(ops.AssignmentError) as e:
            ops.parse_time(bad, "due_at")
        assert e.value.field == "due_at" and e.value.code == "bad_time"
    with pytest.raises(ops.AssignmentError, match="due_at must be after opens_at"):
        ops.check_dates(T0, T0, None)
    with pytest.raises(ops.AssignmentError, match="late_until must be after due_at"):
        ops.check_dates(T0, T0 + US, T0 + US)
    with pytest.raises(ops.AssignmentError, match="Unknown exercise.*'nope'.*'nada'"):
        ops.check_exercises(["a", "nope", "nada"], ["a"])


# ---- the API -------------------------------------------------------------------------------------------------


def _new(c, token, **kw):
    body = {"name": "Week 1", "exercises": [EX, EX2], "opens_at": iso(now() - dt.timedelta(days=1)),
            "due_at": iso(now() + dt.timedelta(days=6)), **kw}
    return c.post("/api/v1/assignments", json=body, headers=bearer(token))


def test_api_crud_and_what_a_learner_sees(app, accounts):
    c = app.test_client()
    boss, ada = accounts.user("boss", staff=True), accounts.user("ada")
    due = now() + dt.timedelta(days=6)
    r = _new(c, boss, due_at=iso(due), late_until=iso(due + dt.timedelta(days=2)))
    assert r.status_code == 201, r.json
    aid = r.json["id"]
    assert r.headers["Location"] == f"/api/v1/assignments/{aid}"
    assert (r.json["exercises"], r.json["due_at"], r.json["created_by"]) == ([EX, EX2], iso(due), "boss")
    later = _new(c, boss, name="Week 2", opens_at=iso(now() + dt.timedelta(days=3)),
                 due_at=iso(now() + dt.timedelta(days=10))).json
    # the learner: only the open one, with their window and per-exercise status
    seen = c.get("/api/v1/assignments", headers=bearer(ada)).json["assignments"]
    assert [a["name"] for a in seen] == ["Week 1"]
    assert seen[0]["window"] == {"opens_at": seen[0]["opens_at"], "due_at": iso(due),
                                 "late_until": iso(due + dt.timedelta(days=2)), "extended": False}
    assert seen[0]["exercises"] == [{"exercise": EX, "status": "not_tried", "timing": None},
                                    {"exercise": EX2, "status": "not_tried", "timing": None}]
    assert c.get(f"/api/v1/assignments/{later['id']}", headers=bearer(ada)).status_code == 404  # not open yet
    assert c.get(f"/api/v1/assignments/{later['id']}", headers=bearer(boss)).json["name"] == "Week 2"
    assert [a["name"] for a in c.get("/api/v1/assignments", headers=bearer(boss)).json["assignments"]] == \
        ["Week 1", "Week 2"]
    # edit: reorder, rename, drop the late window
    p = c.patch(f"/api/v1/assignments/{aid}", json={"exercises": [EX2, EX], "name": "Week one", "late_until": None},
                headers=bearer(boss))
    assert p.status_code == 200 and (p.json["exercises"], p.json["name"], p.json["late_until"]) == \
        ([EX2, EX], "Week one", None)
    # an extension: the learner's own due time
    ext_due = due + dt.timedelta(days=4)
    x = c.put(f"/api/v1/assignments/{aid}/extensions/ada", json={"due_at": iso(ext_due)}, headers=bearer(boss))
    assert x.status_code == 200 and [(e["username"], e["due_at"], e["late_until"]) for e in x.json["extensions"]] \
        == [("ada", iso(ext_due), None)]
    mine = c.get(f"/api/v1/assignments/{aid}", headers=bearer(ada)).json
    assert (mine["window"]["due_at"], mine["window"]["extended"], mine["due_at"]) == (iso(ext_due), True, iso(due))
    assert c.delete(f"/api/v1/assignments/{aid}/extensions/ada", headers=bearer(boss)).status_code == 204
    assert c.delete(f"/api/v1/assignments/{aid}/extensions/ada", headers=bearer(boss)).status_code == 404
    assert c.get(f"/api/v1/assignments/{aid}", headers=bearer(ada)).json["window"]["extended"] is False
    assert c.delete(f"/api/v1/assignments/{aid}", headers=bearer(boss)).status_code == 204
    assert c.get(f"/api/v1/assignments/{aid}", headers=bearer(boss)).status_code == 404
    assert [a["id"] for a in c.get("/api/v1/assignments", headers=bearer(boss)).json["assignments"]] == [later["id"]]


REFUSED = [  # (the body's change, status, code, field, words of the message)
    ({"exercises": [EX, "no-such-one", "nor-this"]}, 400, "unknown_exercise", "exercises", "'no-such-one', 'nor-this'"),
    ({"exercises": []}, 400, "bad_exercises", "exercises", "non-empty"),
    ({"exercises": [EX, EX]}, 400, "bad_exercises", "exercises", "listed twice"),
    ({"due_at": "2020-01-01T00:00:00Z"}, 400, "bad_dates", "due_at", "due_at must be after opens_at"),
    ({"late_until": "2020-01-01T00:00:00Z"}, 400, "bad_dates", "late_until", "late_until must be after due_at"),
    ({"opens_at": "next monday"}, 400, "bad_time", "opens_at", "not a time"),
    ({"name": "  "}, 400, "bad_name", "name", "1 to 128"),
    ({"name": None}, 400, "missing_field", "name", "name is required"),
    ({"colour": "red"}, 400, "unknown_field", None, "colour"),
    ({"name": "Taken"}, 409, "name_taken", "name", "exists"),
]


def test_api_refuses_bad_assignments_saying_why(app, accounts):
    c = app.test_client()
    boss = accounts.user("boss", staff=True)
    assert _new(c, boss, name="Taken").status_code == 201
    for body, status, code, field, words in REFUSED:
        r = _new(c, boss, **{"name": "Fresh", **body})
        assert r.status_code == status and r.json["error"]["code"] == code, (body, r.json)
        assert r.json["error"].get("field") == field and words in r.json["error"]["message"], (body, r.json)
    assert c.post("/api/v1/assignments", data="{", headers={**bearer(boss), "Content-Type": "application/json"}
                  ).json["error"]["code"] == "bad_json"
    assert [a["name"] for a in c.get("/api/v1/assignments", headers=bearer(boss)).json["assignments"]] == ["Taken"]


def test_api_refused_changes_change_nothing(app, accounts):
    c = app.test_client()
    boss, _ = accounts.user("boss", staff=True), accounts.user("ada")
    a = _new(c, boss).json
    r = c.patch(f"/api/v1/assignments/{a['id']}", json={"name": "New", "due_at": a["opens_at"]}, headers=bearer(boss))
    assert (r.status_code, r.json["error"]["field"]) == (400, "due_at")
    ghost = c.put(f"/api/v1/assignments/{a['id']}/extensions/nobody", json={"due_at": a["due_at"]},
                  headers=bearer(boss))
    assert (ghost.status_code, ghost.json["error"]["code"]) == (404, "unknown_user") and "nobody" in ghost.text
    early = c.put(f"/api/v1/assignments/{a['id']}/extensions/ada", json={"due_at": "2020-01-01T00:00:00Z"},
                  headers=bearer(boss))
    assert (early.status_code, early.json["error"]["field"]) == (400, "due_at")
    assert c.get(f"/api/v1/assignments/{a['id']}", headers=bearer(boss)).json == a
    for url in ("/api/v1/assignments/999", "/api/v1/assignments/0", f"/api/v1/assignments/{2**63}"):
        assert c.patch(url, json={"name": "x"}, headers=bearer(boss)).status_code == 404, url
        assert c.get(url, headers=bearer(boss)).status_code == 404, url


def test_api_401_without_credentials_and_403_for_a_learner(app, accounts):
    c = app.test_client()
    boss, ada = accounts.user("boss", staff=True), accounts.user("ada")
    aid = _new(c, boss).json["id"]
    staff_ops = [("post", "/api/v1/assignments", {"name": "x"}), ("patch", f"/api/v1/assignments/{aid}", {"name": "x"}),
                 ("delete", f"/api/v1/assignments/{aid}", None),
                 ("put", f"/api/v1/assignments/{aid}/extensions/ada", {"due_at": "2030-01-01T00:00:00Z"}),
                 ("delete", f"/api/v1/assignments/{aid}/extensions/ada", None)]
    for method, url, body in [*staff_ops, ("get", "/api/v1/assignments", None), ("get", f"/api/v1/assignments/{aid}",
                                                                                   None)]:
        r = getattr(c, method)(url, json=body)
        assert (r.status_code, r.json["error"]["code"]) == (401, "unauthorized"), (method, url)
    for method, url, body in staff_ops:
        r = getattr(c, method)(url, json=body, headers=bearer(ada))
        assert (r.status_code, r.json["error"]["code"]) == (403, "forbidden"), (method, url)
    assert c.get(f"/api/v1/assignments/{aid}", headers=bearer(boss)).json["name"] == "Week 1"  # untouched


# ---- submissions record their timing; the learner's pages ----------------------------------------------------


def _judged(c, sub_id: int, runner: str, status: str = "accepted") -> None:
    job = c.post("/api/v1/runner/claim", json={"modes": ["gpu"]}, headers=bearer(runner)).json["job"]
    assert job["id"] == sub_id
    r = c.post(f"/api/v1/runner/jobs/{sub_id}/result", headers=bearer(runner),
               json={"lease_id": job["lease_id"], "verdict": {"status": status, "tests": [
                   {"name": "test_a", "status": "pass" if status == "accepted" else "fail"}]}})
    assert r.json == {"stored": True}


def test_a_submission_records_its_timing_and_the_learner_sees_it(app, accounts):
    c = app.test_client()
    boss, runner = accounts.user("boss", staff=True), accounts.runner("r1")
    accounts.user("ada", password="ada-password-1")
    t = now()
    day = dt.timedelta(days=1)
    ids = {}
    for name, opens, due, late in [("On time", t - day, t + day, None), ("In the late window", t - 3 * day,
                                                                         t - day, t + day),
                                   ("Too late", t - 3 * day, t - 2 * day, t - day), ("Not open", t + day, t + 2 * day,
                                                                                     None)]:
        body = {"name": name, "exercises": [EX, EX2], "opens_at": iso(opens), "due_at": iso(due)}
        if late:
            body["late_until"] = iso(late)
        ids[name] = c.post("/api/v1/assignments", json=body, headers=bearer(boss)).json["id"]
    ada = _logged_in(app, "ada", "ada-password-1")
    csrf = ada.get("/api/v1/me").json["csrf_token"]
    # a visible-tests run records nothing; a graded submission its timing against each assignment (even one that
    # is not open yet: the exercise is public)
    run = ada.post("/api/v1/submissions", json={"exercise": EX, "code": "x = 1", "run": True},
                   headers={"X-CSRF-Token": csrf}).json
    assert run["timings"] == []
    sub = ada.post("/api/v1/submissions", json={"exercise": EX, "code": "x = 1"}, headers={"X-CSRF-Token": csrf})
    assert sub.status_code == 201
    want = {("On time", ON_TIME), ("In the late window", LATE), ("Too late", AFTER), ("Not open", ON_TIME)}
    assert {(x["name"], x["timing"]) for x in sub.json["timings"]} == want
    assert {x["assignment"] for x in sub.json["timings"]} == set(ids.values())
    assert ada.get(f"/api/v1/submissions/{sub.json['id']}").json["timings"] == sub.json["timings"]
    listed = ada.get("/api/v1/submissions").json["submissions"]
    assert [s["timings"] for s in listed] == [sub.json["timings"], []]
    # the learner's status: tried, then accepted with the recorded timing
    seen = {a["name"]: a for a in ada.get("/api/v1/assignments").json["assignments"]}
    assert set(seen) == {"On time", "In the late window", "Too late"}
    assert seen["On time"]["exercises"][0] == {"exercise": EX, "status": "tried", "timing": None}
    _judged(c, run["id"], runner)
    _judged(c, sub.json["id"], runner)
    seen = {a["name"]: a for a in ada.get("/api/v1/assignments").json["assignments"]}
    assert {n: (a["exercises"][0]["timing"], a["accepted"]) for n, a in seen.items()} == \
        {"On time": (ON_TIME, 1), "In the late window": (LATE, 1), "Too late": (AFTER, 1)}
    assert seen["On time"]["exercises"][1]["status"] == "not_tried"
    # the pages: the list's block and the exercise page's lines, for this learner only
    page = ada.get("/").text
    block = page[page.index('id="your-assignments"'):page.index("</section>", page.index('id="your-assignments"'))]
    assert "Your assignments" in block and "<strong>On time</strong>: due " in block and "Not open" not in block
    assert block.count("1 of 2 accepted") == 3 and " UTC" in block
    ex_page = ada.get(f"/exercises/{EX}").text
    assert re.search(r"Due \d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? UTC \(assignment On time\): accepted on time\.", ex_page)
    assert "(assignment In the late window): accepted late, in the late window." in ex_page
    assert "(assignment Too late): accepted after the deadline." in ex_page
    assert "assignment Not open" not in ex_page
    assert "(assignment On time)." in ada.get(f"/exercises/{EX2}").text  # not accepted: just the due time
    # deleting an assignment takes its timings with it; the submission stays
    assert c.delete(f"/api/v1/assignments/{ids['Too late']}", headers=bearer(boss)).status_code == 204
    assert {x["name"] for x in ada.get(f"/api/v1/submissions/{sub.json['id']}").json["timings"]} == \
        {"On time", "In the late window", "Not open"}
    visitor = app.test_client()
    assert "your-assignments" not in visitor.get("/").text
    assert "assignment-due" not in visitor.get(f"/exercises/{EX}").text


# ---- the staff pages -----------------------------------------------------------------------------------------


def test_staff_pages_need_staff(app, accounts):
    accounts.user("boss", password="boss-pass-phrase", staff=True)
    accounts.user("ada", password="ada-password-1")
    anon = app.test_client()
    for url in ("/staff/assignments/", "/staff/assignments/new", "/staff/assignments/1"):
        r = anon.get(url)
        assert r.status_code == 302 and "/login" in r.headers["Location"], url
    assert anon.post("/staff/assignments/new", data={}).status_code == 302
    ada = _logged_in(app, "ada", "ada-password-1")
    for url in ("/staff/assignments/", "/staff/assignments/new"):
        assert ada.get(url).status_code == 403
    assert ada.post("/staff/assignments/new", data={"csrf_token": _csrf(ada.get("/").text)}).status_code == 403
    boss = _logged_in(app, "boss", "boss-pass-phrase")
    staff_page = boss.get("/staff/").text
    assert 'href="/staff/assignments/"' in staff_page


def test_staff_forms_create_edit_extend_and_delete(app, accounts):
    accounts.user("boss", password="boss-pass-phrase", staff=True)
    accounts.user("ada")
    boss = _logged_in(app, "boss", "boss-pass-phrase")
    form = boss.get("/staff/assignments/new").text
    assert 'type="datetime-local"' in form and "UTC" in form
    csrf = _csrf(form)
    typed = {"csrf_token": csrf, "name": "Week 1", "exercises": f"{EX}, nope", "opens_at": "2026-12-01T09:00",
             "due_at": "2026-12-08T17:30", "late_until": "2026-12-08T17:00"}
    bad = boss.post("/staff/assignments/new", data=typed)
    assert bad.status_code == 400 and "Unknown exercise(s): &#39;nope&#39;" in bad.text
    assert f'value="{EX}, nope"' in bad.text and 'value="2026-12-08T17:30"' in bad.text  # nothing typed is lost
    typed["exercises"] = f"{EX}, {EX2}"
    worse = boss.post("/staff/assignments/new", data=typed)
    assert worse.status_code == 400 and "late_until must be after due_at" in worse.text
    assert boss.post("/staff/assignments/new", data={**typed, "csrf_token": "wrong"}).status_code == 400
    typed["late_until"] = ""
    made = boss.post("/staff/assignments/new", data=typed)
    assert made.status_code == 302
    edit_url = made.headers["Location"].split("?")[0]
    page = boss.get(edit_url).text
    assert 'value="2026-12-08T17:30"' in page and f'value="{EX}, {EX2}"' in page
    assert "Week 1" in boss.get("/staff/assignments/").text
    # edit: the late window added; a refused edit keeps what was typed and changes nothing
    edited = boss.post(edit_url, data={**typed, "name": "Week one", "late_until": "2026-12-09T17:30:30"})
    assert edited.status_code == 302
    refused = boss.post(edit_url, data={**typed, "due_at": "2026-11-30T00:00"})
    assert refused.status_code == 400 and "due_at must be after opens_at" in refused.text
    page = boss.get(edit_url).text
    assert "Week one" in page and 'value="2026-12-09T17:30:30" step="1"' in page
    # extensions: an unknown learner refused, then granted, listed with the moved late window, removed
    ghost = boss.post(edit_url + "/extensions", data={"csrf_token": csrf, "username": "ghost",
                                                      "due_at": "2026-12-10T12:00"})
    assert ghost.status_code == 400 and "No user &#39;ghost&#39;" in ghost.text and 'value="ghost"' in ghost.text
    assert boss.post(edit_url + "/extensions", data={"csrf_token": csrf, "username": "ada",
                                                     "due_at": "2026-12-10T12:00"}).status_code == 302
    page = boss.get(edit_url).text
    row = page[page.index('id="extension-list"'):page.index("</table>", page.index('id="extension-list"'))]
    assert "ada" in row and "2026-12-10 12:00 UTC" in row and "2026-12-11 12:00:30 UTC" in row and "boss" in row
    assert boss.post(edit_url + "/extensions/ada/delete", data={"csrf_token": csrf}).status_code == 302
    assert "No extensions." in boss.get(edit_url).text
    assert boss.post(edit_url + "/delete", data={"csrf_token": csrf}).status_code == 302
    assert boss.get(edit_url).status_code == 404 and "No assignments yet." in boss.get("/staff/assignments/").text


# ---- the admin commands --------------------------------------------------------------------------------------


def test_admin_commands(app, accounts):
    accounts.user("ada")
    cli = app.test_cli_runner()

    def run(*args: str):
        return cli.invoke(args=["assignments", *args])

    r = run("create", "Week 1", "--exercises", f"{EX},{EX2}", "--opens", "2026-12-01T09:00Z", "--due",
            "2026-12-08T18:00+01:00", "--late-until", "2026-12-09T17:00Z")
    assert r.exit_code == 0 and "due 2026-12-08T17:00:00Z" in r.output, r.output
    bad = run("create", "Week 2", "--exercises", f"{EX},nope", "--opens", "2026-12-01T09:00Z", "--due",
              "2026-12-08T17:00Z")
    assert bad.exit_code == 1 and "Unknown exercise(s): 'nope'" in bad.output
    early = run("create", "Week 2", "--exercises", EX, "--opens", "2026-12-01T09:00Z", "--due", "2026-11-08T17:00Z")
    assert early.exit_code == 1 and "due_at must be after opens_at" in early.output
    assert run("create", "Week 1", "--exercises", EX, "--opens", "2026-12-01T09:00Z", "--due",
               "2026-12-08T17:00Z").exit_code == 1
    assert run("edit", "Week 1", "--late-until", "2026-12-08T16:00Z").exit_code == 1  # before the due time
    r = run("edit", "Week 1", "--name", "Week one", "--exercises", EX2, "--no-late")
    assert r.exit_code == 0 and "late until no late window exercises graph-capture-buffer" in r.output, r.output
    ghost = run("extend", "Week one", "ghost", "--due", "2026-12-10T17:00Z")
    assert ghost.exit_code == 1 and "No user 'ghost'" in ghost.output
    assert run("extend", "Week one", "ada").exit_code == 1  # neither --due nor --remove
    assert run("extend", "Week one", "ada", "--due", "2026-12-10T17:00Z").exit_code == 0
    listed = run("list")
    assert "Week one" in listed.output and "extension: ada due 2026-12-10T17:00:00Z" in listed.output
    assert run("extend", "Week one", "ada", "--remove").exit_code == 0
    assert "extension" not in run("list").output
    assert run("delete", "Nope").exit_code == 1 and "No assignment 'Nope'" in run("delete", "Nope").output
    assert run("delete", "Week one").exit_code == 0 and "no assignments" in run("list").output
