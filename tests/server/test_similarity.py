"""Similarity reports (web/similarity.py, web/staff_similarity.py): the ranking on the exercise bank, once per new
accepted submission, other learners only, the staff pages, the background thread and the command."""

from __future__ import annotations

import ast
import io
import keyword
import re
import time
import tokenize
import tomllib

import pytest
from sqlalchemy import func, select

from tests.server.pieces import ROOT, wait_for
from web import auth
from web import similarity as sim
from web.models import DONE, QUEUED, SimilarityMark, SimilarityPair, Submission, User

EXERCISES = ROOT / "exercises"
EX = "radix-match-insert"  # its alternative has five methods to reorder
# the independent set: alternatives (one correct solution per exercise, each written apart from the engine) and
# reference solutions of the exercises whose alternatives or references score highest against each other
# the engine stage's exercises (the serving stage's came later: this ranking was read and checked without them)
SERVING = {"messages", "tokenizer", "scheduler-io", "api-server", "benchmarking"}
# and the scaling stage's (chapters 0, 16, 17's FlashAttention, 20) came later still
LATER = {"tiny-engine", "tp-heads", "tp-vocab-parallel", "fa-metadata", "moe-route", "moe-align-block-size"}
ALTERNATIVES = sorted(p.parent.parent.name for p in EXERCISES.glob("*/alternatives/alt1.py")
                      if tomllib.loads((p.parent.parent / "exercise.toml").read_text())["chapter"] not in SERVING
                      and p.parent.parent.name not in LATER)[:23]
REFERENCES = ["graph-capture-loop", "load-weights", "cache-release", "graph-capture-buffer", "cache-match-and-lock"]


def alternative(slug: str) -> str:
    return (EXERCISES / slug / "alternatives" / "alt1.py").read_text()


def reference(slug: str) -> str:
    return sim.reference_for(EXERCISES, slug)


def disguise(code: str) -> str:
    """What a learner who copies does: every local name and parameter renamed (v0, v1, ...; ``self`` too), the
    docstring dropped, each run of one-line assignments in a function in the reverse order, the functions (and the
    methods of each class) in the reverse order."""
    tree = ast.parse(code)
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                   | {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
                      for a in n.posonlyargs + n.args + n.kwonlyargs})
    new = {name: f"v{i}" for i, name in enumerate(names) if not keyword.iskeyword(name)}
    toks = []
    prev = None
    for t in tokenize.generate_tokens(io.StringIO(code).readline):
        if t.type == tokenize.NAME and t.string in new and not (prev and prev.string == "."):
            t = t._replace(string=new[t.string])
        toks.append(t)
        prev = t
    code = tokenize.untokenize(toks)
    tree = ast.parse(code)
    lines = code.splitlines(True)
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            run: list[ast.stmt] = []
            for stmt in [*fn.body, None]:
                if isinstance(stmt, ast.Assign) and stmt.lineno == stmt.end_lineno:
                    run.append(stmt)
                    continue
                if len(run) > 1:
                    at = [r.lineno - 1 for r in run]
                    for i, line in zip(at, [lines[i] for i in reversed(at)]):
                        lines[i] = line
                run = []

    def text(node) -> str:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        return "".join(lines[first - 1:node.end_lineno])

    defs, rest = [], []
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.ClassDef):
            head = "".join(lines[node.lineno - 1:node.body[0].lineno - 1])
            defs.append(head + "\n".join(text(n) for n in reversed(node.body)))
        elif isinstance(node, ast.FunctionDef):
            defs.append(text(node))
        else:
            rest.append(text(node))
    return "".join(rest) + "\n\n" + "\n\n".join(reversed(defs))


def learner(db, name: str) -> int:
    return auth.create_user(db, name, None).id


def accepted(db, user_id: int, code: str, *, exercise: str = EX, result: str = "accepted", state: str = DONE,
             run_only: bool = False) -> int:
    with db.session() as s:
        sub = Submission(user_id=user_id, exercise=exercise, mode="cpu", code=code, state=state, run_only=run_only,
                         result=result if state == DONE else None)
        s.add(sub)
        s.flush()
        return sub.id


def pairs(db) -> list[tuple[int, int | None, float]]:
    with db.session() as s:
        return [(p.submission_id, p.other_id, p.score) for p in
                s.scalars(select(SimilarityPair).order_by(SimilarityPair.score.desc(), SimilarityPair.id))]


def count(db, model) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(model))


def test_the_report_ranks_a_renamed_reordered_copy_and_a_copy_of_the_reference_first(grading):
    """On the bank: 28 solutions written independently (the alternatives of 23 exercises and the reference
    solutions of 5, all submitted as solutions of one exercise by 28 learners), one learner's copy of another's
    solution (identifiers renamed, statements and methods reordered: ``disguise``) and a learner's copy of the
    exercise's reference (the same).

    Independent: each alternative was written apart from the engine for its own exercise, each reference is the
    engine's code for its own; the references chosen are those that score highest against an alternative of the
    same exercise or against each other (graph-capture-loop, load-weights, the cache- and graph- stubs). The
    mutants are left out: each is its exercise's reference with one rule broken, so they are near copies of the
    reference and of each other by construction (230 of the bank's 245 score 0.6 or more against theirs, median
    0.83: see THRESHOLD), not independent work.

    Every pair compared is stored here (threshold 0) so that the whole ranking can be read: the two copies come
    first, every independent pair (and every independent solution against the reference) scores below both, and
    one alone reaches THRESHOLD (graph-capture-loop's alternative against its reference, 0.69: see THRESHOLD).
    Then one more learner's submission is compared with the 30 others: the time it takes."""
    db = grading.db
    author = learner(db, "author")
    mine = alternative(EX)
    original = accepted(db, author, mine)
    independent = {original}
    for slug in ALTERNATIVES:
        if slug != EX:
            independent.add(accepted(db, learner(db, f"alt-{slug}"), alternative(slug)))
    for slug in REFERENCES:
        independent.add(accepted(db, learner(db, f"ref-{slug}"), reference(slug)))
    assert len(independent) == 28
    copy = accepted(db, learner(db, "copier"), disguise(mine))
    ref_copy = accepted(db, learner(db, "ref-copier"), disguise(reference(EX)))

    assert sim.process_pending(db, EXERCISES, limit=100, threshold=0.0) == 30
    ranked = pairs(db)
    assert len(ranked) == 30 * 29 // 2 + 30  # every pair once, and each against the reference
    assert {(a, b) for a, b, _ in ranked[:2]} == {(copy, original), (ref_copy, None)}
    copies_low = min(score for _, _, score in ranked[:2])
    rest = [score for _, _, score in ranked[2:]]
    assert copies_low >= 0.75 and max(rest) < 0.7 < copies_low
    assert sum(score >= sim.THRESHOLD for score in rest) == 1
    report = sim.exercise_pairs(db, per_exercise=2)  # what the staff page and the API list: the highest first
    assert [(r["pair"].submission_id, r["pair"].other_id) for r in report] == [(a, b) for a, b, _ in ranked[:2]]

    late = accepted(db, learner(db, "late"), alternative("scheduler-admission"))
    t0 = time.perf_counter()
    assert sim.process_pending(db, EXERCISES, threshold=0.0) == 1
    took = time.perf_counter() - t0
    print(f"\none new submission against 30 others and the reference: {took * 1000:.0f} ms ({grading.db.dialect})")
    assert sum(1 for a, _, _ in pairs(db) if a == late) == 31 and took < 10


def test_each_new_accepted_submission_is_compared_once_with_other_learners_latest(grading):
    db = grading.db
    ann, bob, cat, dan = (learner(db, n) for n in ("ann", "bob", "cat", "dan"))
    code = alternative(EX)
    a1 = accepted(db, ann, code)
    b1 = accepted(db, bob, disguise(code))
    for kw in ({"result": "wrong_answer"}, {"run_only": True}, {"state": QUEUED}):
        accepted(db, cat, code, **kw)  # not accepted, a run of the examples, not judged yet: never compared
    a2 = accepted(db, ann, code + "\n# again\n")  # ann's latest: her own copy of herself is no pair
    accepted(db, dan, disguise(code), exercise="radix-lock")  # another exercise

    assert sim.counts(db) == (0, 4)  # compared, waiting
    assert sim.process_pending(db, EXERCISES) == 4
    assert sim.counts(db) == (4, 0)
    with db.session() as s:
        marked = set(s.scalars(select(SimilarityMark.submission_id)))
    assert len(marked) == 4 and a1 in marked and b1 in marked and a2 in marked
    # b1 came before ann's latest (a2) was compared, so a2 compared itself with b1: one pair, stored once
    assert [(a, b) for a, b, _ in pairs(db)] == [(a2, b1)]
    before = (count(db, SimilarityMark), pairs(db))
    assert sim.process_pending(db, EXERCISES) == 0  # nothing new: nothing computed again
    assert (count(db, SimilarityMark), pairs(db)) == before
    assert not sim.claim(db, a1)  # the mark's primary key: a second claim of a1 is refused

    d2 = accepted(db, dan, disguise(code))
    assert sim.process_pending(db, EXERCISES) == 1
    assert {(a, b) for a, b, _ in pairs(db)} == {(a2, b1), (d2, a2), (d2, b1)}
    assert all(score >= sim.THRESHOLD for _, _, score in pairs(db))


def test_workers_at_once_compare_each_submission_once_and_store_each_pair_once(grading):
    """Four workers (threads here, gunicorn's processes in a deployment) on the same new submissions: each is
    claimed by one (its mark), and each pair of them is stored once, whichever worker compared it."""
    import itertools
    import threading

    db = grading.db
    code = alternative(EX)
    subs = [accepted(db, learner(db, f"l{i}"), code if i % 2 else disguise(code)) for i in range(12)]
    start, done = threading.Barrier(4), []

    def work():
        start.wait()
        done.append(sim.process_pending(db, EXERCISES))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sum(done) == 12 and count(db, SimilarityMark) == 12
    stored = [(a, b) for a, b, _ in pairs(db)]
    assert len(stored) == len({frozenset(p) for p in stored}) == 66  # every pair of the twelve, once
    assert {frozenset(p) for p in stored} == {frozenset(p) for p in itertools.combinations(subs, 2)}


SCRIPT = "<script>alert('copied')</script>"


@pytest.mark.parametrize("backend", ["sqlite"])  # the pages only read what the tests above check on both
def test_the_staff_pages_and_the_api_rank_the_pairs_and_show_the_codes_escaped(app, grading):
    db = grading.db
    auth.create_user(db, "learner1", "learner1-pass-phrase")
    auth.create_user(db, "boss", "boss-pass-phrase", staff=True)
    code = alternative(EX) + f'\nNOTE = "{SCRIPT}"\n'
    first = accepted(db, learner(db, "ann"), code)
    second = accepted(db, learner(db, "bob"), disguise(code))
    third = accepted(db, learner(db, "cat"), disguise(reference(EX)))
    sim.process_pending(db, EXERCISES)
    with db.session() as s:
        pair_id = s.scalar(select(SimilarityPair.id).where(SimilarityPair.submission_id == second))
        ref_pair = s.scalar(select(SimilarityPair.id).where(SimilarityPair.submission_id == third,
                                                            SimilarityPair.other_id.is_(None)))

    anonymous = app.test_client()
    for path in ("/staff/similarity/", f"/staff/similarity/{pair_id}"):
        r = anonymous.get(path)
        assert r.status_code == 302 and "/login" in r.headers["Location"]
    as_learner = login(app, "learner1", "learner1-pass-phrase")
    assert [as_learner.get(p).status_code for p in ("/staff/similarity/", f"/staff/similarity/{pair_id}")] == [403, 403]

    staff = login(app, "boss", "boss-pass-phrase")
    assert 'href="/staff/similarity/"' in staff.get("/staff/").text  # linked from the staff page
    listing = staff.get(f"/staff/similarity/?exercise={EX}").text
    rows = re.findall(r"<tr><td>([0-9.]+)</td>\s*<td>(\w+) <span class=\"muted\">#(\d+)", listing)
    assert [r[1:] for r in rows] == [("cat", str(third)), ("bob", str(second))]  # by score: 0.92, 0.84
    assert float(rows[0][0]) >= float(rows[1][0]) >= sim.THRESHOLD
    assert f'/staff/similarity/{pair_id}"' in listing and "ann" in listing
    assert "No similar pairs for graph-bs-list" in staff.get("/staff/similarity/?exercise=graph-bs-list").text
    fourth = accepted(db, learner(db, "dan"), code)  # a page request never compares: it only says it waits
    assert 'id="n-waiting">1<' in staff.get("/staff/similarity/").text and count(db, SimilarityMark) == 3

    page = staff.get(f"/staff/similarity/{pair_id}")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert SCRIPT not in page.text and "&lt;script&gt;alert(" in page.text  # learner code is text, never markup
    marked = re.findall(r"<mark>(.*?)</mark>", page.text, re.S)
    assert len(marked) >= 2 and sum(len(m) for m in marked) > len(code) // 2  # most of both codes is shared
    assert staff.get("/staff/similarity/999999").status_code == 404
    ref_page = staff.get(f"/staff/similarity/{ref_pair}").text
    assert "The reference solution</h2>" in ref_page and "cat <span" in ref_page
    assert re.search(r'id="code-b"><code>.*<mark>', ref_page, re.S) and "the reference solution" in listing
    assert first in {p[1] for p in pairs(db)} and fourth not in {p[0] for p in pairs(db)}

    # the same report as JSON: staff only
    api = app.test_client()
    assert api.get("/api/v1/similarity").status_code == 401
    learner_token, staff_token = auth.create_api_token(db, "learner1"), auth.create_api_token(db, "boss")
    r = api.get("/api/v1/similarity", headers={"Authorization": f"Bearer {learner_token}"})
    assert (r.status_code, r.json["error"]["code"]) == (403, "staff_only")
    as_staff = {"Authorization": f"Bearer {staff_token}"}
    body = api.get(f"/api/v1/similarity?exercise={EX}", headers=as_staff).json
    top = body["pairs"][1]
    assert (top["id"], top["submission"]["id"], top["submission"]["user"]) == (pair_id, second, "bob")
    assert top["other"]["id"] == first and top["other"]["created_at"].endswith("Z") and top["score"] >= 0.6
    assert top["link"] == f"/staff/similarity/{pair_id}" and body["waiting"] == 1 and body["compared"] == 3
    assert [p["other"] for p in body["pairs"] if p["id"] == ref_pair] == [None]  # the reference
    for bad in ("limit=0", "limit=x", "exercise=Not_A_Slug"):
        r = api.get(f"/api/v1/similarity?{bad}", headers=as_staff)
        assert (r.status_code, r.json["error"]["code"]) == (400, "invalid_parameter")
    assert api.get("/api/v1/similarity?exercise=graph-bs-list", headers=as_staff).json["pairs"] == []


def login(app, username: str, password: str):
    c = app.test_client()
    page = c.get("/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    r = c.post("/login", data={"username": username, "password": password, "csrf_token": token})
    assert r.status_code == 302
    return c


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_thread_and_the_command_compare_in_the_background(db_url, tmp_path):
    from web import create_app

    app = create_app({"DATABASE_URL": db_url, "TESTING": True, "SECRET_KEY": "t", "REAPER_SECONDS": 0,
                      "SIMILARITY_SECONDS": 0.2})
    app.instance_path = str(tmp_path / "instance")
    db = app.extensions["grading"].db
    try:
        code = alternative(EX)
        first = accepted(db, learner(db, "ann"), code)
        assert app.test_client().get("/").status_code == 200  # not computed on the request ...
        wait_for(lambda: count(db, SimilarityMark) == 1, 20, "the similarity thread")  # ... but beside it
        with db.session() as s:
            assert s.scalar(select(User.username).join(Submission).where(Submission.id == first)) == "ann"
    finally:
        app.extensions["grading"].stop_similarity()
        app.extensions["grading"].hub.stop()
    assert not app.extensions["grading"]._similarity.is_alive()

    quiet = create_app({"DATABASE_URL": db_url, "TESTING": True, "SECRET_KEY": "t", "SIMILARITY_SECONDS": 0})
    second = accepted(db, learner(db, "bob"), disguise(code))
    out = quiet.test_cli_runner().invoke(args=["similarity", "run"])
    assert out.exit_code == 0 and "compared 1 new accepted submissions; 2 compared in all, 0 waiting" in out.output
    assert [(a, b) for a, b, _ in pairs(db)] == [(second, first)]
    db.dispose()
