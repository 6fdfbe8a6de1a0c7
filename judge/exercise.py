"""Exercises: folders of data under ``exercises/<slug>/``, read and validated here.

Pure standard library: the command-line parent lists and shows exercises without importing torch.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .modes import MODES

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
TARGET_RE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?$")
DIFFICULTIES = ("easy", "medium", "hard")

REPO_ROOT = Path(__file__).resolve().parent.parent


def default_exercises_dir() -> Path:
    """``$MINISGL_EXERCISES`` if set, else the ``exercises/`` folder of this checkout."""
    env = os.environ.get("MINISGL_EXERCISES")
    return Path(env) if env else REPO_ROOT / "exercises"


class ExerciseError(Exception):
    """A malformed or missing exercise; the message names the file and the field."""


CHAPTERS_FILE = "chapters.toml"
HINT_SEPARATOR = "---"  # a line of its own between two hints in hints.md


def _file(name: str, doc: str | None = None) -> property:
    """A property: the path of the exercise's file ``name``."""
    return property(lambda self: self.path / name, doc=doc or f"The exercise's ``{name}``.")


@dataclass(frozen=True)
class Chapter:
    """One chapter of the course (``exercises/chapters.toml``), in course order."""

    number: int  # the book's chapter number where `book` is given (the course follows the book), else the position
    id: str
    title: str
    covers: str
    modules: tuple[str, ...]
    book: int | None = None  # the chapter's number in the book "mini-sglang from Scratch" (None: not given)


def load_chapters(root: str | Path | None = None) -> list[Chapter]:
    """The chapters of ``<root>/chapters.toml`` in course order, numbered as the book numbers them (else from 1)."""
    root = Path(root) if root is not None else default_exercises_dir()
    path = root / CHAPTERS_FILE
    where = str(path)
    if not path.is_file():
        raise ExerciseError(f"{where}: file not found (the exercises folder lists its chapters there)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ExerciseError(f"{where}: invalid TOML: {e}") from None
    rows = data.get("chapter")
    if not isinstance(rows, list) or not rows:
        raise ExerciseError(f"{where}: no [[chapter]] entries")
    out: list[Chapter] = []
    for i, row in enumerate(rows, 1):
        w = f"{where}: chapter {i}"
        cid = _field(row, "id", str, w)
        if not SLUG_RE.match(cid):
            raise ExerciseError(f"{w}: id {cid!r} is not a slug (lowercase letters, digits and '-')")
        if any(c.id == cid for c in out):
            raise ExerciseError(f"{w}: id {cid!r} is listed twice")
        book = _field(row, "book", int, w, None)
        if book is not None and book < 0:
            raise ExerciseError(f"{w}: field 'book' must be a chapter number (0 or more), got {book}")
        if book is not None and out and (out[-1].book is None or book <= out[-1].book):
            raise ExerciseError(f"{w}: book {book} must come after book {out[-1].book} (the chapters are listed "
                                "in the book's order, each with its number)")
        out.append(Chapter(number=i if book is None else book, id=cid, title=_field(row, "title", str, w),
                           covers=_field(row, "covers", str, w),
                           modules=tuple(_str_list(row, "modules", w, [])), book=book))
    return out


@dataclass(frozen=True)
class Target:
    """One engine symbol the learner writes: ``module:function`` or ``module:Class.method``."""

    spec: str
    module: str
    owner: str | None  # the class name, or None for a module-level function
    name: str

    @property
    def qualname(self) -> str:
        return f"{self.owner}.{self.name}" if self.owner else self.name

    @classmethod
    def parse(cls, spec: str) -> Target:
        if not TARGET_RE.match(spec):
            raise ValueError(
                f"{spec!r} is not a target: write 'package.module:function' or 'package.module:Class.method'"
            )
        module, qual = spec.split(":")
        owner, _, name = qual.rpartition(".")
        return cls(spec=spec, module=module, owner=owner or None, name=name)


@dataclass
class Exercise:
    slug: str
    path: Path
    title: str
    chapter: str  # a chapter id of chapters.toml
    difficulty: str
    tags: list[str]
    targets: list[Target]
    modes: list[str]
    time_limit: float  # seconds for a whole run (process start included)
    test_time_limit: float  # seconds for one test
    order: int = 0
    memory_limit_mb: int | None = None
    trusted_imports: list[str] = field(default_factory=list)  # modules a solution may import in trusted mode
    # engine functions besides the targets that hold the answer (a kernel the target launches): trusted mode
    # removes their bodies from the learner's copy of the engine too, so a submission cannot call them
    withheld: list[Target] = field(default_factory=list)
    # the mutants (``mutants/<name>.py``) that stand for the commonest mistakes: Run must reject each of them
    run_catches: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    # the files of an exercise
    toml_path = _file("exercise.toml")
    statement_path = _file("statement.md")
    starter_path = _file("starter.py")
    tests_path = _file("tests.py")
    explanation_path = _file("explanation.md")
    hints_path = _file("hints.md", "The hints, revealed one at a time: Markdown, separated by lines of ``---``.")
    solution_path = _file("solution.py", "Only for exercises whose targets are not in the engine, or whose engine code "
                                         "calls a ``withheld`` helper (the solution holds it); otherwise the "
                                         "engine is the reference.")

    @property
    def alternative_paths(self) -> list[Path]:
        """Alternative correct solutions (``alternatives/*.py``): ``check`` requires each to be accepted."""
        d = self.path / "alternatives"
        return sorted(d.glob("*.py")) if d.is_dir() else []

    @property
    def mutant_paths(self) -> list[Path]:
        d = self.path / "mutants"
        return sorted(d.glob("*.py")) if d.is_dir() else []

    def read(self, name: str) -> str:
        return (self.path / name).read_text(encoding="utf-8")

    @property
    def statement(self) -> str:
        return self.statement_path.read_text(encoding="utf-8")

    @property
    def starter(self) -> str:
        return self.starter_path.read_text(encoding="utf-8")

    @property
    def explanation(self) -> str:
        return self.explanation_path.read_text(encoding="utf-8")

    @property
    def hints(self) -> list[str]:
        """The hints of ``hints.md`` in order, each stripped (an empty one stays, for ``check`` to refuse); no
        file: none."""
        if not self.hints_path.is_file():
            return []
        return split_hints(self.hints_path.read_text(encoding="utf-8"))


def split_hints(text: str) -> list[str]:
    """The hints of a hints.md text: the parts between lines that are ``---`` alone; a blank text has none."""
    if not text.strip():
        return []
    parts, current = [], []
    for line in text.splitlines():
        if line.strip() == HINT_SEPARATOR:
            parts.append(current)
            current = []
        else:
            current.append(line)
    parts.append(current)
    return ["\n".join(lines).strip() for lines in parts]


def _field(data: dict, key: str, kind, where: str, default=...):
    if key not in data:
        if default is ...:
            raise ExerciseError(f"{where}: missing field '{key}'")
        return default
    value = data[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ExerciseError(
            f"{where}: field '{key}' must be {getattr(kind, '__name__', kind)}, got {type(value).__name__} {value!r}"
        )
    return value


def _str_list(data: dict, key: str, where: str, default=...) -> list[str]:
    value = _field(data, key, list, where, default)
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise ExerciseError(f"{where}: field '{key}'[{i}] must be a non-empty string, got {item!r}")
    return list(value)


def load_exercise(path: str | Path) -> Exercise:
    """Read and validate ``<path>/exercise.toml`` and check that the exercise's files are there."""
    path = Path(path).resolve()
    toml_path = path / "exercise.toml"
    where = str(toml_path)
    if not toml_path.is_file():
        raise ExerciseError(f"{where}: file not found (every exercise folder needs an exercise.toml)")
    slug = path.name
    if not SLUG_RE.match(slug):
        raise ExerciseError(f"{path}: the folder name {slug!r} is not a slug (lowercase letters, digits and '-')")
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ExerciseError(f"{where}: invalid TOML: {e}") from None

    known = {
        "title", "chapter", "difficulty", "tags", "targets", "modes", "time_limit",
        "test_time_limit", "order", "memory_limit_mb", "trusted_imports",
        "run_catches", "withheld",
    }
    title = _field(data, "title", str, where)
    if not title.strip():
        raise ExerciseError(f"{where}: field 'title' is empty")
    chapter = _field(data, "chapter", str, where)
    chapters = {c.id: c for c in load_chapters(path.parent)}
    if chapter not in chapters:
        raise ExerciseError(f"{where}: field 'chapter' must be a chapter id of {path.parent / CHAPTERS_FILE} "
                            f"({', '.join(chapters)}), got {chapter!r}")
    difficulty = _field(data, "difficulty", str, where)
    if difficulty not in DIFFICULTIES:
        raise ExerciseError(f"{where}: field 'difficulty' must be one of {DIFFICULTIES}, got {difficulty!r}")
    tags = _str_list(data, "tags", where, [])
    raw_targets = _str_list(data, "targets", where)
    if not raw_targets:
        raise ExerciseError(f"{where}: field 'targets' is empty: name at least one engine symbol")
    targets = []
    for i, spec in enumerate(raw_targets):
        try:
            targets.append(Target.parse(spec))
        except ValueError as e:
            raise ExerciseError(f"{where}: field 'targets'[{i}]: {e}") from None
    if len({t.spec for t in targets}) != len(targets):
        raise ExerciseError(f"{where}: field 'targets' lists a target twice")
    withheld = []
    for i, spec in enumerate(_str_list(data, "withheld", where, [])):
        try:
            withheld.append(Target.parse(spec))
        except ValueError as e:
            raise ExerciseError(f"{where}: field 'withheld'[{i}]: {e}") from None
    modes = _str_list(data, "modes", where, ["browser", "local"])
    for i, m in enumerate(modes):
        if m not in MODES:
            raise ExerciseError(f"{where}: field 'modes'[{i}] must be one of {MODES}, got {m!r}")
    time_limit = _field(data, "time_limit", float, where, 60.0)
    test_time_limit = _field(data, "test_time_limit", float, where, min(time_limit, 20.0))
    for key, val in (("time_limit", time_limit), ("test_time_limit", test_time_limit)):
        if not 0 < val <= 3600:
            raise ExerciseError(f"{where}: field '{key}' must be between 0 and 3600 seconds, got {val}")
    order = _field(data, "order", int, where, 0)
    memory = _field(data, "memory_limit_mb", int, where, None)
    trusted_imports = _str_list(data, "trusted_imports", where, [])
    for i, name in enumerate(trusted_imports):
        if not re.match(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$", name):
            raise ExerciseError(f"{where}: field 'trusted_imports'[{i}] must be a module name, got {name!r}")
    # only the shape here: whether each is one of the exercise's mutants is ``check``'s (judge/validate.py), as
    # trusted mode loads exercises whose mutants/ may be absent
    run_catches = _str_list(data, "run_catches", where, [])
    extra = {k: v for k, v in data.items() if k not in known}
    if extra:
        raise ExerciseError(f"{where}: unknown field(s) {sorted(extra)}; known fields are {sorted(known)}")

    ex = Exercise(
        slug=slug, path=path, title=title, chapter=chapter, difficulty=difficulty, tags=tags,
        targets=targets, modes=modes, time_limit=time_limit, test_time_limit=test_time_limit,
        order=order, memory_limit_mb=memory, trusted_imports=trusted_imports, run_catches=run_catches,
        withheld=withheld,
    )
    for p in (ex.statement_path, ex.starter_path, ex.tests_path, ex.explanation_path):
        if not p.is_file():
            raise ExerciseError(f"{p}: file not found (required for exercise {slug!r})")
    return ex


def list_exercises(root: str | Path | None = None) -> list[Exercise]:
    """Every exercise under ``root`` (folders with an exercise.toml), in course order: chapter, order, slug."""
    root = Path(root) if root is not None else default_exercises_dir()
    if not root.is_dir():
        return []
    found = [load_exercise(p) for p in sorted(root.iterdir()) if (p / "exercise.toml").is_file()]
    number = {c.id: c.number for c in load_chapters(root)} if found else {}
    return sorted(found, key=lambda e: (number[e.chapter], e.order, e.slug))


def find_exercise(slug: str, root: str | Path | None = None) -> Exercise:
    root = Path(root) if root is not None else default_exercises_dir()
    path = root / slug
    if not SLUG_RE.match(slug) or not (path / "exercise.toml").is_file():
        known = ", ".join(e.slug for e in list_exercises(root)) or "none"
        raise ExerciseError(f"no exercise {slug!r} in {root} (known: {known})")
    return load_exercise(path)
