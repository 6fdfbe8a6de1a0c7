"""The judge: loads exercises, splices a submission into minisgl, runs the tests, returns a verdict.

Light on purpose: importing ``judge`` imports no torch (the command line and the isolation parent
stay fast). The in-process core is ``judge.harness``; isolation is ``judge.isolation``.
"""

from .exercise import Exercise, ExerciseError, Target, find_exercise, list_exercises, load_exercise
from .verdict import VERSION, TestResult, Verdict

__all__ = [
    "Exercise", "ExerciseError", "Target", "find_exercise", "list_exercises", "load_exercise",
    "VERSION", "TestResult", "Verdict",
]
