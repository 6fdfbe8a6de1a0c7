"""A runner's verdict checked at the door, before the queue stores it and learners are served it.

What a runner may post as ``verdict``: the verdict of ``judge/verdict.schema.json`` in which every field but
``status`` (and each test's ``name`` and ``status``) may be left out, the judge's defaults filling it in, and every
field that is there has the schema's type, enum, pattern and minimum, and no field the schema does not name. On
top of the schema, the site's own bounds (what ``RESULT_SCHEMA`` adds), each refused with a 400 that names the
field (``verdict.tests[3].output``), never cut:

- text: a verdict's ``message`` and ``output`` and each test's ``doc``, ``message`` and ``output`` at most
  ``TEXT_CAP`` (64 Ki) characters each; the judge itself keeps at most 4000 (``judge.verdict.OUTPUT_CAP``), so
  only a broken or hostile runner goes past it; names (exercise, test, env, metric, trust measure) ``NAME_CAP``;
- at most ``MAX_TESTS`` tests, ``MAX_METRICS`` metrics, ``MAX_MEASURES`` trust measures; ``seed`` a signed
  64-bit integer; ``ms`` at most ``MAX_MS``;
- finite numbers only: ``NaN``, ``Infinity`` and ``1e999`` are refused while the body is parsed
  (``web.errors.json_object``), before anything here;
- the whole request body at most ``web.runners.MAX_RESULT_BYTES`` (1 MiB): 413, before it is read.

A verdict is for one job, and says so: its ``exercise`` and ``run`` must be the job's, its ``mode`` one the job can be
judged in (``gpu`` or, on a runner without a GPU, ``local``; ``local`` for a ``cpu`` job), else a 400 naming the
field (a runner that mixed jobs up, or lies: a full Submit's "accepted" for a Run of the examples would read as
solved). What the verdict leaves out of the three is the job's, never the judge's defaults.

The verdict is then filled in and recounted (``Verdict.from_dict(...).finalize()``: the counts and the status agree
with the tests), so what is stored is a whole verdict of the judge's schema (tests/server/test_runner_door.py
checks it with every field required). Cost: about 2 ms for a verdict of a few tests, a few hundred ms for one of
1 MiB (jsonschema), once per job.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

import judge
from judge.modes import judge_mode
from judge.verdict import Verdict

from .errors import ApiError, field_path

VERDICT_SCHEMA: dict[str, Any] = json.loads((Path(judge.__file__).parent / "verdict.schema.json").read_text())
TEXT_CAP = 65536  # characters of a verdict's message or output, and of a test's doc, message or output
NAME_CAP = 200  # characters of the exercise, a test's name, an env string, a metric's name, a trust measure
MAX_TESTS = 1000
MAX_METRICS = 100
MAX_MEASURES = 64
MAX_MS = 1e9  # milliseconds: about 11 days, far past any time limit


def _result_schema(base: dict[str, Any]) -> dict[str, Any]:
    """The judge's schema with optional fields and the site's bounds (a KeyError here: the judge's schema changed
    shape, and this module must follow it)."""
    s = copy.deepcopy(base)
    s["required"] = ["status"]
    p = s["properties"]
    p["exercise"]["maxLength"] = NAME_CAP
    p["message"]["maxLength"] = p["output"]["maxLength"] = TEXT_CAP
    p["ms"]["maximum"] = MAX_MS
    p["seed"].update(minimum=-(2**63), maximum=2**63 - 1)
    env = p["env"]
    env["required"] = []
    for key in ("python", "torch", "gpu"):
        env["properties"][key]["maxLength"] = NAME_CAP
    tests = p["tests"]
    tests["maxItems"] = MAX_TESTS
    test = tests["items"]
    test["required"] = ["name", "status"]
    test["properties"]["name"]["maxLength"] = NAME_CAP
    for key in ("doc", "message", "output"):
        test["properties"][key]["maxLength"] = TEXT_CAP
    test["properties"]["ms"]["maximum"] = MAX_MS
    p["metrics"].update(maxProperties=MAX_METRICS, propertyNames={"maxLength": NAME_CAP})
    trust = p["trust"]
    trust["required"] = []
    trust["properties"]["measures"].update(maxItems=MAX_MEASURES)
    trust["properties"]["measures"]["items"]["maxLength"] = NAME_CAP
    return s


RESULT_SCHEMA = _result_schema(VERDICT_SCHEMA)
_AT_THE_DOOR = jsonschema.Draft202012Validator(RESULT_SCHEMA)
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
               float: "a number", type(None): "null"}


def _what(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _problem(e: jsonschema.ValidationError, root: str) -> tuple[str, str]:
    """(the field's path, what is wrong with it), in words that do not repeat a 64 KiB value."""
    path = [root, *e.absolute_path]
    v, want = e.instance, e.validator_value
    if e.validator == "required":
        missing = [k for k in want if k not in v]
        return field_path([*path, missing[0]]), "is required"
    if e.validator == "additionalProperties":
        known = set(e.schema.get("properties", {}))
        extra = sorted(str(k) for k in v if k not in known)
        return field_path([*path, extra[0][:80]]), "is not a field of a verdict (judge/verdict.schema.json)"
    field = field_path(path)
    if e.validator == "type":
        kinds = want if isinstance(want, list) else [want]
        return field, f"must be {' or '.join(map(str, kinds))}, not {_what(v)}"
    if e.validator in ("enum", "const"):
        allowed = want if e.validator == "enum" else [want]
        return field, f"must be one of {json.dumps(allowed)}, not {json.dumps(v)[:60]}"
    if e.validator == "maxLength":
        return field, f"is {len(v)} characters; at most {want} are taken"
    if e.validator in ("maxItems", "maxProperties"):
        return field, f"has {len(v)} entries; at most {want} are taken"
    if e.validator in ("minimum", "maximum"):
        return field, f"must be {'at least' if e.validator == 'minimum' else 'at most'} {want}, not {v}"
    if e.validator == "pattern":
        return field, f"must match {want!r}"
    if e.validator == "propertyNames":
        return field, f"has a name longer than {NAME_CAP} characters"
    return field, e.message[:200]


@dataclass(frozen=True)
class JobFacts:
    """What the site knows of the job a verdict is posted for."""

    id: int
    exercise: str
    mode: str  # the submission's: gpu | cpu
    run: bool


def _of_the_job(raw: dict[str, Any], job: JobFacts, root: str) -> dict[str, Any]:
    """``raw`` with the job's exercise, run and mode where it has none; ApiError 400 where it names others."""
    modes = sorted({judge_mode(job.mode, gpu=True), judge_mode(job.mode, gpu=False)})
    for key, fits in (("exercise", lambda v: v == job.exercise), ("run", lambda v: v is job.run),
                      ("mode", lambda v: v in modes)):
        if key in raw and not fits(raw[key]):
            field = f"{root}.{key}"
            raise ApiError(400, "bad_verdict", f"{field} is {json.dumps(raw[key])[:80]}, which is not job {job.id}'s "
                           "(a verdict is for the job whose lease it carries).", field=field)
    return {"exercise": job.exercise, "run": job.run, "mode": judge_mode(job.mode), **raw}


def checked_verdict(raw: Any, root: str = "verdict", job: JobFacts | None = None) -> dict[str, Any]:
    """The verdict to store, from what a runner posted at ``root`` of its body for ``job`` (None: a job the site
    does not have, whose result will not be stored); ApiError 400 naming the field."""
    if not isinstance(raw, dict):
        raise ApiError(400, "bad_verdict", f"'{root}' must be a verdict object (judge/verdict.schema.json).",
                       field=root)
    error = best_match(_AT_THE_DOOR.iter_errors(raw))
    if error is not None:
        field, what = _problem(error, root)
        raise ApiError(400, "bad_verdict", f"{field} {what}.", field=field)
    if job is not None:
        raw = _of_the_job(raw, job, root)
    return Verdict.from_dict(raw).finalize().to_dict()
