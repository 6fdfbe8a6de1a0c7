"""The JSON API: answers, errors (JSON, the right status, never a 500), and its OpenAPI document, which
must validate and agree with the app's routes; schemathesis then checks the API against it."""

from __future__ import annotations

import re

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from openapi_spec_validator import validate
from schemathesis.config import SchemathesisConfig

from judge.exercise import list_exercises, load_chapters
from web import create_app

# Built at import (schemathesis parametrizes from it), so no similarity thread: on CPython 3.11.7 its parses
# would race pytest's assertion rewriting of the modules collected after this one (python/cpython#106905).
app = create_app({"TESTING": True, "SIMILARITY_SECONDS": 0})


@pytest.fixture
def client():
    return app.test_client()


def test_list_is_the_exercises_in_course_order(client):
    r = client.get("/api/v1/exercises")
    assert r.status_code == 200 and r.is_json
    body = r.get_json()
    assert [e["id"] for e in body["exercises"]] == [e.slug for e in list_exercises()]
    assert [c["id"] for c in body["chapters"]] == [c.id for c in load_chapters()]
    assert body["count"] == len(body["exercises"]) > 0


@pytest.mark.parametrize("query, expect", [
    ("difficulty=hard", lambda e: e.difficulty == "hard"),
    ("mode=gpu", lambda e: "gpu" in e.modes),
    ("tag=buffers", lambda e: "buffers" in e.tags),
    ("q=PAD", lambda e: "pad" in (e.slug + e.title).lower() or any("pad" in t.spec.lower() for t in e.targets)),
    ("chapter=cuda-graph&difficulty=easy", lambda e: e.chapter == "cuda-graph" and e.difficulty == "easy"),
    ("chapter=no-such-chapter", lambda e: False),
])
def test_list_filters(client, query, expect):
    got = [e["id"] for e in client.get(f"/api/v1/exercises?{query}").get_json()["exercises"]]
    assert got == [e.slug for e in list_exercises() if expect(e)]


def test_exercise_has_what_the_page_needs_and_no_solution(client):
    body = client.get("/api/v1/exercises/graph-capture-buffer").get_json()
    assert body["starter"].startswith('"""Exercise graph-capture-buffer')
    assert [t["name"] for t in body["visible_tests"]] == [
        "test_example_set_batch_makes_views", "test_example_copy_from_copies_every_input"]
    assert body["visible_tests"][0]["source"].startswith("def test_example_set_batch_makes_views")
    assert body["test_count"]["hidden"] >= 1 and body["modes"] == ["browser", "local", "gpu"]
    assert "<pre" in body["statement_html"] and 'class="k"' in body["statement_html"]  # highlighted on the server
    assert "solution" not in body and "explanation" not in body
    assert body["prev"] == "graph-bs-list" and body["next"] == "graph-pad-and-replay"


def test_solution_is_the_engines_code(client):
    import inspect

    from minisgl.engine.graph import GraphCaptureBuffer

    body = client.get("/api/v1/exercises/graph-capture-buffer/solution").get_json()
    assert inspect.getsource(GraphCaptureBuffer.copy_from).strip().splitlines()[-1].strip() in body["solution"]
    assert body["explanation_html"].strip().startswith("<")


LONG = "a" * 5000
BAD_REQUESTS = [
    # (method, url, status, error code)
    ("GET", "/api/v1/exercises/no-such-exercise", 404, "not_found"),
    ("GET", "/api/v1/exercises/no-such-exercise/solution", 404, "not_found"),
    ("GET", "/api/v1/exercises/Graph-Capture-Buffer", 400, "invalid_id"),
    ("GET", "/api/v1/exercises/graph--buffer", 400, "invalid_id"),
    ("GET", "/api/v1/exercises/..%2F..%2Fetc%2Fpasswd", 404, "not_found"),  # a slash never reaches the view
    ("GET", "/api/v1/exercises/%2e%2e", 400, "invalid_id"),
    ("GET", "/api/v1/exercises/" + "a" * 65, 400, "invalid_id"),
    ("GET", "/api/v1/exercises/%00", 400, "invalid_id"),
    ("GET", "/api/v1/exercises/caf%C3%A9", 400, "invalid_id"),
    ("GET", "/api/v1/exercises/-x", 400, "invalid_id"),
    ("GET", "/api/v1/exercises?difficulty=impossible", 400, "invalid_parameter"),
    ("GET", "/api/v1/exercises?mode=tpu", 400, "invalid_parameter"),
    ("GET", "/api/v1/exercises?difficulty=%1F", 400, "invalid_parameter"),  # a control character is no empty filter
    ("GET", "/api/v1/exercises?chapter=Not%20A%20Slug", 400, "invalid_parameter"),
    ("GET", "/api/v1/exercises?q=a&q=b", 400, "invalid_parameter"),
    ("GET", "/api/v1/exercises?q=" + "b" * 201, 400, "invalid_parameter"),
    ("GET", "/api/v1/exercises?q=" + LONG, 414, "request_uri_too_long"),
    ("GET", "/api/v1/exercises/graph-capture-buffer?x=" + LONG, 414, "request_uri_too_long"),
    ("GET", "/api/v1/nothing-here", 404, "not_found"),
    ("GET", "/api/v2/exercises", 404, "not_found"),
    ("POST", "/api/v1/exercises", 405, "method_not_allowed"),
    ("PUT", "/api/v1/exercises/graph-capture-buffer", 405, "method_not_allowed"),
    ("DELETE", "/api/v1/exercises/graph-capture-buffer", 405, "method_not_allowed"),
    ("PATCH", "/api/v1/exercises/graph-capture-buffer/solution", 405, "method_not_allowed"),
    ("POST", "/api/v1/openapi.json", 405, "method_not_allowed"),
]


@pytest.mark.parametrize("method, url, status, code", BAD_REQUESTS, ids=[f"{m} {u[:60]}" for m, u, *_ in BAD_REQUESTS])
def test_bad_requests_get_json_errors(client, method, url, status, code):
    r = client.open(url, method=method, data=b"{not json" if method != "GET" else None,
                    content_type="application/json")
    assert r.status_code == status, r.data[:300]
    assert r.is_json, r.data[:300]
    err = r.get_json()["error"]
    assert err == {"status": status, "code": code, "message": err["message"]} and err["message"]
    if status == 405:
        assert "GET" in r.headers["Allow"]


def test_pages_answer_html_errors(client):
    r = client.get("/exercises/no-such-exercise")
    assert r.status_code == 404 and r.mimetype == "text/html" and b"no exercise" in r.data
    assert client.get("/?difficulty=nope").status_code == 400
    assert client.get("/?q=" + LONG).status_code == 414


def test_a_broken_exercises_folder_is_a_503_naming_the_file(tmp_path):
    (tmp_path / "chapters.toml").write_text("[[chapter]]\nid = 'x'\n", encoding="utf-8")
    broken = create_app({"TESTING": True, "EXERCISES_DIR": str(tmp_path)}).test_client()
    r = broken.get("/api/v1/exercises")
    assert r.status_code == 503 and "chapters.toml" in r.get_json()["error"]["message"]


# ---- the OpenAPI document ------------------------------------------------------------------------

def test_openapi_document_validates(client):
    doc = client.get("/api/v1/openapi.json").get_json()
    validate(doc)  # raises on an invalid OpenAPI 3.1 document
    assert doc["openapi"].startswith("3.1")


def _api_rules() -> set[tuple[str, str]]:
    out = set()
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/"):
            path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule)
            out |= {(path, m.lower()) for m in rule.methods - {"HEAD", "OPTIONS"}}
    return out


def test_openapi_document_matches_the_routes(client):
    doc = client.get("/api/v1/openapi.json").get_json()
    described = {(path, method) for path, item in doc["paths"].items() for method in item}
    assert described == _api_rules(), "routes and the OpenAPI document disagree"
    for path, item in doc["paths"].items():
        for method, op in item.items():
            params = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert params == set(re.findall(r"{([^}]+)}", path)), f"{method} {path}: path parameters"


_CONFIG = SchemathesisConfig.from_dict(
    # a schema-violating request may also be refused as too long (414)
    # (the grading server's endpoints check the token first: 401; a body that is not JSON: 415; too big: 413)
    {"checks": {"negative_data_rejection": {"expected-statuses": ["400", "401", "404", "405", "413", "414",
                                                                  "415"]}}}
)
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app, config=_CONFIG)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_openapi_document(case):
    """Positive and negative requests generated from the document: documented statuses and bodies, no 5xx."""
    case.call_and_validate()
