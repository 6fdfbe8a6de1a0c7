"""Modes: one vocabulary, ``MODES``, and the one mapping to the grading server's queue.

A judging's mode says how the judge runs the tests: ``browser`` (Pyodide), ``local`` (a CPU process, CUDA
graphs emulated) or ``gpu`` (a CUDA device, real graphs). An exercise lists the modes it supports, the
verdict says which one judged it, and the learner's command line speaks only these words
(``test --mode local|gpu``, ``submit --mode local|gpu``).

The grading server's queue keeps a submission's mode in its own words, ``SUBMISSION_MODES`` (``gpu`` or
``cpu``: which kind of runner slot it asks for), stored in its database and spoken by its API and its
runners. ``judge_mode`` and ``submission_mode`` are the only translation between the two.

Pure standard library.
"""

from __future__ import annotations

MODES = ("browser", "local", "gpu")
SUBMISSION_MODES = ("gpu", "cpu")
_JUDGED_IN = {"gpu": "gpu", "cpu": "local"}  # a submission's mode -> the judging's mode


def judge_mode(submission: str, *, gpu: bool = True) -> str:
    """The mode a submission of mode ``submission`` (``gpu`` | ``cpu``) is judged in, where a GPU is
    (``gpu=True``) or is not: without one, a ``gpu`` submission is judged in ``local`` (graphs emulated)."""
    mode = _JUDGED_IN.get(submission, "local")
    return mode if gpu else "local"


def submission_mode(mode: str) -> str:
    """The server's word for a judging mode the learner typed (``local`` -> ``cpu``, ``gpu`` -> ``gpu``)."""
    for submission, judged in _JUDGED_IN.items():
        if judged == mode:
            return submission
    raise ValueError(f"mode {mode!r} is not judged on a grading server (one of {sorted(_JUDGED_IN.values())})")
