"""What an exercise's mutants fail, to write or review its promise table (judge/promises.py) from.

    python tools/promise_draft.py SLUG [SLUG ...] [--seed N]

Judges every mutant of each exercise once (local mode, one seed) and prints, per mutant, the first line of its
docstring and the unit-level tests it fails (end-to-end ones in brackets), then the table's problems as
``check`` would see them (``table_problems`` and ``verdict_problems``). Nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from judge.exercise import find_exercise
    from judge.isolation import Judging, judge_isolated
    from judge.promises import NOT_PASSED, _end_to_end, _test_functions, table_problems, verdict_problems

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("slugs", nargs="+")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    bad = 0
    for slug in args.slugs:
        e = find_exercise(slug)
        tests = _test_functions(e)
        e2e = {name for name, fn in tests.items() if _end_to_end(fn)}
        mutants = e.mutant_paths
        verdicts = [o.verdict for o in judge_isolated(
            [Judging(e, p.read_text(encoding="utf-8"), f"mutants/{p.name}", "local", seed=args.seed)
             for p in mutants])]
        print(f"== {slug}: {len(mutants)} mutants; end-to-end tests: {', '.join(sorted(e2e)) or 'none'}")
        for p, v in zip(mutants, verdicts):
            doc = p.read_text(encoding="utf-8").lstrip().removeprefix('"""').split("\n")[0].strip().removesuffix('"""')
            failed = [t.name if t.name not in e2e else f"[{t.name}]" for t in v.tests if t.status in NOT_PASSED]
            print(f"  {p.stem} ({v.status}): {doc}\n      fails: {', '.join(failed) or '-'}")
        problems = table_problems(e) + verdict_problems(e, {p.stem: v for p, v in zip(mutants, verdicts)}, "local")
        bad += bool(problems)
        for line in problems:
            print(f"  PROBLEM {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
