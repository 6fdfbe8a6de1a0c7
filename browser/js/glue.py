"""The Python side of the judge worker (run once inside Pyodide by core.mjs): judge.harness, as the CLI runs it.

``run_job(job_json, emit)`` judges one job and returns the verdict's JSON; ``emit(text)`` receives the harness's
events as JSON (load, plan, test_start, test_end). The deadlines are enforced outside, by the page's supervisor:
an endless test is interrupted (KeyboardInterrupt inside it: ``timeout``), anything worse ends the worker.
"""

import json
import os
import random
import sys


def setup(env_json, sys_path_json):
    os.environ.update(json.loads(env_json))
    for p in reversed(json.loads(sys_path_json)):
        if p not in sys.path:
            sys.path.insert(0, p)
    import judge.harness  # noqa: F401 - imported now, so the first verdict does not pay for it
    from judge.verdict import VERSION

    info = {"python": sys.version.split()[0], "verdict_version": VERSION}
    try:
        import numpy

        info["numpy"] = numpy.__version__
        import torch

        info["torch"] = str(torch.__version__)
        import minisgl.llm  # noqa: F401
    except Exception as e:  # noqa: BLE001 - reported in the ready message; judging still says what failed
        info["import_error"] = f"{type(e).__name__}: {e}"
    import gc

    gc.freeze()  # the modules live as long as the worker: the collection after each job skips them
    return json.dumps(info)


def run_job(job_json, emit):
    from judge.exercise import ExerciseError, find_exercise
    from judge.harness import judge_source
    from judge.solution import reference_source

    job = json.loads(job_json)
    try:
        exercise = find_exercise(str(job["exercise"]))
    except (ExerciseError, KeyError) as e:
        return json.dumps({"error": f"cannot judge: {e}"})
    source = job.get("source")
    if source is None:
        try:
            source = reference_source(exercise)
        except Exception as e:  # noqa: BLE001 - the exercise's fault, never the learner's
            from judge.verdict import Trust, Verdict

            v = Verdict.failure("internal_error", f"The exercise's reference solution could not be read: "
                                f"{type(e).__name__}: {e}", exercise=exercise.slug, mode="browser",
                                run=bool(job.get("run_only")), trust=Trust(level="advisory", measures=["in-process"]))
            return json.dumps({"verdict": v.to_dict()})
    seed = job.get("seed")
    seed = random.SystemRandom().randrange(2**31) if seed is None else int(seed)
    limits = {"test_s": exercise.test_time_limit, "run_s": exercise.time_limit}

    def on_event(ev):
        if ev.get("event") == "load":  # the learner's code runs next: the supervisor's clocks start here
            ev = {**ev, "limits": limits, "seed": seed}
        emit(json.dumps(ev))

    try:
        verdict = judge_source(exercise, str(source), filename=str(job.get("filename") or "submission.py"),
                               mode="browser", run_only=bool(job.get("run_only")), on_event=on_event, seed=seed)
    except KeyboardInterrupt:  # an interrupt that landed between two tests: the supervisor restarts the worker
        return json.dumps({"interrupted": True})
    return json.dumps({"verdict": verdict.to_dict()})


def run_code(code):
    """Run ``code`` (exercise authors, tests and benchmarks); returns the JSON of its global ``RESULT``."""
    scope = {"__name__": "__judge_exec__"}
    exec(compile(code, "<exec>", "exec"), scope)
    return json.dumps(scope.get("RESULT"))
