"""Mutation testing of the bank: mutmut's operators over each exercise's reference, judged by the judge.

    python tools/mutation.py                       # every exercise; writes docs/mutation-report.md
    python tools/mutation.py radix-evict req-lengths --dump /tmp/survivors
    python tools/mutation.py --list radix-evict    # the mutants only, nothing judged
    python tools/mutation.py --mode gpu fi-metadata graph-capture-loop   # on a CUDA GPU: the [[gpu_only]] ones too

mutmut (3.8.1, pinned in the dev extra) makes the mutants: ``create_mutations`` over the reference solution
(``judge.solution.reference_source``: the engine's own code for the targets), one mutant per change it proposes
inside a target (numbers, strings, names, operators, comparisons, assignments, removed arguments, ...). Its own
runner (pytest over a mutated package) is not used: each mutant is judged as a learner's submission is, in local
mode, under ``--seeds`` seeds (default 2, drawn from ``--seed``): a mutant is *killed* when every judging rejects it.

A surviving mutant is either a gap in the tests (write the test that fails it) or equivalent: it behaves as the
statement allows (the same results, or a difference the statement does not promise). Equivalent ones are listed
in ``exercises/<slug>/equivalent_mutants.toml``, each with why; a mutant that only a CUDA device tells apart (such as
a tensor left on the CPU instead of the GPU) goes under ``[[gpu_only]]`` there instead, its why
naming the ``@gpu`` test that judges it on a GPU runner (not equivalent: it counts as not killed here):

    [[equivalent]]
    mutant = "Class.method: `a < b` -> `a <= b`"
    why = "a == b cannot happen here: ..."

The score of an exercise is killed / (mutants - equivalent), GPU-only mutants in the denominator. The run fails (exit
1) when an exercise scores below ``--min-score`` (95 %), when an equivalent entry names no mutant of today's reference
(stale), or when a mutant listed as equivalent is killed (then it is not equivalent: take it out of the list).
"""

from __future__ import annotations

import argparse
import difflib
import random
import re
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from judge.exercise import Exercise, list_exercises  # noqa: E402

EQUIVALENT_FILE = "equivalent_mutants.toml"
GPU_ONLY = "gpu_only"  # the file's second table: mutants only a CUDA device tells apart (the @gpu tests judge them)
GPU_MARK = "[gpu only] "  # how equivalents() marks their why
REPORT = REPO / "docs" / "mutation-report.md"
MIN_SCORE = 0.95


@dataclass
class Mutant:
    id: str  # "<qualname>: `<old>` -> `<new>`" (+ " #k" for the k-th identical change), stable across runs
    source: str  # the whole submission with this one change


@dataclass
class Result:
    exercise: Exercise
    mutants: list[Mutant]
    survivors: list[Mutant] = field(default_factory=list)
    equivalent: dict[str, str] = field(default_factory=dict)  # id -> why (those that survived)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def gpu_only(self) -> int:
        return sum(why.startswith(GPU_MARK) for why in self.equivalent.values())

    @property
    def killed(self) -> int:
        return len(self.mutants) - len(self.survivors)

    @property
    def score(self) -> float:
        live = len(self.mutants) - len(self.equivalent) + self.gpu_only  # GPU-only: not killed, not equivalent
        return 1.0 if live <= 0 else self.killed / live

    @property
    def gaps(self) -> list[Mutant]:
        return [m for m in self.survivors if m.id not in self.equivalent]


def _one_line(code: str, limit: int = 160) -> str:
    text = re.sub(r"\s+", " ", code).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _changed_lines(old: str, new: str) -> tuple[str, str]:
    """The lines that differ between two versions of a source, each side on one line."""
    a, b = old.splitlines(), new.splitlines()
    gone: list[str] = []
    came: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            gone += a[i1:i2]
            came += b[j1:j2]
    return _one_line(" ".join(gone)), _one_line(" ".join(came))


def _qualnames(module) -> dict[int, str]:
    """id(FunctionDef) -> its qualified name (``Class.method`` or ``function``), for the module's top level."""
    import libcst as cst

    names: dict[int, str] = {}
    for node in module.body:
        if isinstance(node, cst.FunctionDef):
            names[id(node)] = node.name.value
        elif isinstance(node, cst.ClassDef):
            for item in node.body.body:
                if isinstance(item, cst.FunctionDef):
                    names[id(item)] = f"{node.name.value}.{item.name.value}"
    return names


def mutants_of(source: str) -> list[Mutant]:
    """Every mutant mutmut's operators make of ``source`` inside its functions and methods, in source order."""
    from mutmut.mutation.file_mutation import create_mutations, deep_replace

    module, mutations, _, _ = create_mutations("reference.py", source)
    names = _qualnames(module)
    out: list[Mutant] = []
    seen: dict[str, int] = {}
    for m in mutations:
        fn = m.contained_by_top_level_function
        if fn is None:  # module-level code (the starter's preamble): not a target
            continue
        qual = names.get(id(fn), fn.name.value)
        code = deep_replace(module, m.original_node, m.mutated_node).code
        if code == source:
            continue
        old, new = _changed_lines(source, code)
        base = f"{qual}: `{old}` -> `{new}`"
        seen[base] = seen.get(base, 0) + 1
        out.append(Mutant(base if seen[base] == 1 else f"{base} #{seen[base]}", code))
    return out


def make(e: Exercise) -> tuple[str, list[Mutant]]:
    """The exercise's reference solution and its mutants."""
    from judge.solution import reference_source

    reference = reference_source(e)
    return reference, mutants_of(reference)


def equivalents(e: Exercise) -> dict[str, str]:
    """The exercise's mutants listed as equivalent: id -> why. A malformed file raises ValueError."""
    path = e.path / EQUIVALENT_FILE
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as ex:
        raise ValueError(f"{path}: {ex}") from None
    out: dict[str, str] = {}
    for table in ("equivalent", GPU_ONLY):
        for i, item in enumerate(data.get(table, []), 1):
            mid, why = item.get("mutant"), item.get("why")
            if not isinstance(mid, str) or not isinstance(why, str) or not why.strip():
                raise ValueError(f"{path}: [[{table}]] entry {i} needs a string 'mutant' and a non-empty 'why'")
            out[mid] = (GPU_MARK if table == GPU_ONLY else "") + why.strip()
    return out


def judge_mutants(e: Exercise, reference: str, mutants: list[Mutant], seeds: list[int], mode: str = "local"
                  ) -> tuple[list[Mutant], str]:
    """The mutants that some judging accepts (survivors), each judged in ``mode`` under every seed; and what is
    wrong with the reference, judged first under the same seeds ("" when it is accepted under each: otherwise a
    rejected mutant says nothing)."""
    from judge.isolation import Judging, judge_isolated

    sources = [reference] + [m.source for m in mutants]
    judgings = [Judging(e, src, "submission.py", mode, seed=s) for src in sources for s in seeds]
    verdicts = [o.verdict for o in judge_isolated(judgings)]
    per = [verdicts[i * len(seeds):(i + 1) * len(seeds)] for i in range(len(sources))]
    wrong = [f"seed {v.seed}: {v.status} {v.message[:200]}".strip() for v in per[0] if v.status != "accepted"]
    alive = [m for m, mine in zip(mutants, per[1:]) if any(v.status == "accepted" for v in mine)]
    return alive, "; ".join(wrong)


def run_exercise(e: Exercise, seeds: list[int], judge: bool = True, made: tuple[str, list[Mutant]] | None = None,
                 mode: str = "local") -> Result:
    """Judge one exercise's mutants; ``made``: its (reference, mutants) when already made (``make``)."""
    start = time.monotonic()
    reference, mutants = made or make(e)
    result = Result(e, mutants)
    try:
        listed = equivalents(e)
    except ValueError as ex:
        result.problems.append(str(ex))
        listed = {}
    ids = {m.id for m in result.mutants}
    for mid in listed:
        if mid not in ids:
            result.problems.append(f"{EQUIVALENT_FILE} lists a mutant that today's reference does not make: {mid}")
    if judge:
        result.survivors, wrong = judge_mutants(e, reference, result.mutants, seeds, mode)
        if wrong:
            result.problems.append(f"the reference is not accepted ({wrong}): the mutants' verdicts say nothing")
        alive = {m.id for m in result.survivors}
        for mid, why in listed.items():
            gpu_only = why.startswith(GPU_MARK)
            if mid in ids and mid not in alive and not (mode == "gpu" and gpu_only):  # on a GPU: what it is for
                result.problems.append(f"{EQUIVALENT_FILE} lists a mutant that the tests kill (not equivalent): {mid}")
            if mode == "gpu" and gpu_only and mid in alive:
                result.problems.append(f"a [[{GPU_ONLY}]] mutant survives on the GPU too: write the @gpu test that "
                                       f"kills it: {mid}")
        result.equivalent = {mid: why for mid, why in listed.items() if mid in alive}
    result.seconds = time.monotonic() - start
    return result


def write_report(results: list[Result], seeds: list[int], path: Path) -> None:
    from importlib.metadata import version

    total = sum(len(r.mutants) for r in results)
    killed = sum(r.killed for r in results)
    gpu_only = sum(r.gpu_only for r in results)
    equiv = sum(len(r.equivalent) for r in results) - gpu_only
    live = total - equiv
    lines = [
        "# Mutation report",
        "",
        f"Made by `make mutation` (`python tools/mutation.py`): mutmut {version('mutmut')}'s operators over each "
        "exercise's reference, every mutant judged in local mode under the seeds "
        f"{', '.join(map(str, seeds))} (killed: rejected under each). Equivalent mutants are listed, with why, in "
        f"`exercises/<slug>/{EQUIVALENT_FILE}`. A mutant of a CUDA-only path (what a CPU cannot tell apart, such as "
        "a tensor left on the CPU instead of the GPU) is listed there under "
        "`[[gpu_only]]`, with the `@gpu` test that judges it on a GPU runner; here it counts as not killed. "
        "Score: killed / (mutants - equivalent).",
        "",
        f"**All exercises: {total} mutants, {killed} killed, {equiv} equivalent, {gpu_only} GPU-only, "
        f"{total - killed - equiv - gpu_only} surviving: {100 * killed / max(1, live):.1f} %.**",
        "",
        "| exercise | mutants | killed | equivalent | GPU only | surviving | score |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(f"| {r.exercise.slug} | {len(r.mutants)} | {r.killed} | {len(r.equivalent) - r.gpu_only} | "
                     f"{r.gpu_only} | {len(r.gaps)} "
                     f"| {100 * r.score:.1f} % |")
    gaps = [r for r in results if r.gaps]
    if gaps:
        lines += ["", "## Surviving mutants (not equivalent)", ""]
        for r in gaps:
            lines.append(f"- {r.exercise.slug}:")
            lines += [f"  - {m.id}" for m in r.gaps]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exercises", nargs="*", help="exercise ids (default: all)")
    ap.add_argument("--seed", type=int, default=1, help="the seed the judging seeds are drawn from (default 1)")
    ap.add_argument("--seeds", type=int, default=2, help="judgings per mutant, each with its own seed (default 2)")
    ap.add_argument("--jobs", type=int, default=2, help="exercises judged in parallel (default 2)")
    ap.add_argument("--list", action="store_true", help="list the mutants, judge nothing")
    ap.add_argument("--dump", type=Path, help="write each surviving mutant (not equivalent) to DUMP/<slug>/<n>.py")
    ap.add_argument("--report", type=Path, default=None,
                    help=f"write the report there (default: {REPORT.relative_to(REPO)} when every exercise is run)")
    ap.add_argument("--min-score", type=float, default=MIN_SCORE)
    ap.add_argument("--mode", choices=["local", "gpu"], default="local",
                    help="judge in local mode (default) or in gpu mode on a CUDA GPU, where the [[gpu_only]] "
                         "mutants must be killed too")
    args = ap.parse_args(argv)
    if args.mode == "gpu":
        import torch

        if not torch.cuda.is_available():
            print("error: --mode gpu needs a CUDA GPU (torch.cuda.is_available() is False here)", file=sys.stderr)
            return 2

    every = list_exercises()
    if args.exercises:
        known = {e.slug: e for e in every}
        unknown = [s for s in args.exercises if s not in known]
        if unknown:
            print(f"error: unknown exercise(s): {', '.join(unknown)}", file=sys.stderr)
            return 2
        chosen = [known[s] for s in args.exercises]
    else:
        chosen = every
    g = random.Random(args.seed)
    seeds = [g.randrange(2**31) for _ in range(max(1, args.seeds))]

    if args.list:
        for e in chosen:
            r = run_exercise(e, seeds, judge=False)
            print(f"{e.slug}: {len(r.mutants)} mutants")
            for m in r.mutants:
                print(f"  {m.id}")
            for p in r.problems:
                print(f"  PROBLEM {p}")
        return 0

    from judge.cli import _import_targets

    _import_targets(chosen)
    made = {e.slug: make(e) for e in chosen}
    total = sum(len(m) for _, m in made.values())
    print(f"{len(chosen)} exercise(s), {total} mutants, {len(seeds)} seed(s) each ({', '.join(map(str, seeds))})",
          flush=True)
    done = 0

    def one(e: Exercise) -> Result:
        nonlocal done
        r = run_exercise(e, seeds, made=made[e.slug], mode=args.mode)
        done += len(r.mutants)
        print(f"[{done}/{total}] {e.slug}: {r.killed}/{len(r.mutants)} killed, "
              f"{len(r.equivalent) - r.gpu_only} equivalent, {r.gpu_only} GPU-only, "
              f"{len(r.gaps)} surviving, score {100 * r.score:.1f} % ({r.seconds:.0f} s)", flush=True)
        return r

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one, chosen))

    bad = 0
    for r in results:
        low = r.score < args.min_score
        if low or r.problems:
            bad += 1
        if r.gaps or r.problems or low:
            print(f"\n{r.exercise.slug}: score {100 * r.score:.1f} %" + (" (below the minimum)" if low else ""))
            for m in r.gaps:
                print(f"  survives: {m.id}")
            for p in r.problems:
                print(f"  problem: {p}")
        if args.dump and r.gaps:
            folder = args.dump / r.exercise.slug
            folder.mkdir(parents=True, exist_ok=True)
            for i, m in enumerate(r.gaps, 1):
                (folder / f"{i}.py").write_text(f"# mutant: {m.id}\n{m.source}", encoding="utf-8")
    report = args.report or (REPORT if not args.exercises and args.mode == "local" else None)
    if report:
        write_report(results, seeds, report)
        print(f"\nreport written to {report}")
    print(f"\n{len(results) - bad}/{len(results)} exercises at or above {100 * args.min_score:.0f} % with no problem")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
