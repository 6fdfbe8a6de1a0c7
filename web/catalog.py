"""The exercises as the site shows them: judge's chapters and exercises, plus what the pages need
(rendered statements, the visible tests' source, neighbours in course order, filters).

Nothing here duplicates the exercises' data: it is read through ``judge.exercise`` and rebuilt when a
file under the exercises folder changes (so an author sees an edit on the next request).
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge import pyast
from judge.exercise import Chapter, Exercise, default_exercises_dir, list_exercises, load_chapters
from judge.modes import MODES

from .rendering import markdown_html

EXAMPLE_PREFIX = "test_example"  # judge.harness: the visible tests that Run shows


@dataclass(frozen=True)
class VisibleTest:
    name: str
    doc: str
    source: str
    line: int  # first line of the function in tests.py


@dataclass(frozen=True)
class Entry:
    exercise: Exercise
    chapter: Chapter
    statement_html: str
    visible_tests: tuple[VisibleTest, ...]
    hidden_count: int
    prev: str | None = None
    next: str | None = None

    @property
    def slug(self) -> str:
        return self.exercise.slug

    def summary(self) -> dict[str, Any]:
        e = self.exercise
        return {
            "id": e.slug, "title": e.title, "chapter": e.chapter, "difficulty": e.difficulty,
            "tags": list(e.tags), "modes": list(e.modes), "targets": [t.spec for t in e.targets],
        }

    def detail(self) -> dict[str, Any]:
        e = self.exercise
        return {
            **self.summary(),
            "chapter_title": self.chapter.title,
            "chapter_number": self.chapter.number,
            "time_limit": e.time_limit, "test_time_limit": e.test_time_limit,
            "statement": e.statement, "statement_html": self.statement_html,
            "starter": e.starter,
            "visible_tests": [
                {"name": t.name, "doc": t.doc, "source": t.source, "line": t.line} for t in self.visible_tests
            ],
            "test_count": {"visible": len(self.visible_tests), "hidden": self.hidden_count},
            "prev": self.prev, "next": self.next,
        }

    def haystack(self) -> str:
        e = self.exercise
        return " ".join([e.slug, e.title, self.chapter.title, *e.tags, *(t.spec for t in e.targets)]).lower()


@dataclass(frozen=True)
class Filters:
    """The list's filters, as in the URL: ``?q=&chapter=&difficulty=&mode=&tag=`` (empty: any)."""

    q: str = ""
    chapter: str = ""
    difficulty: str = ""
    mode: str = ""
    tag: str = ""

    def match(self, entry: Entry) -> bool:
        e = entry.exercise
        words = self.q.lower().split()
        return (
            all(w in entry.haystack() for w in words)
            and (not self.chapter or e.chapter == self.chapter)
            and (not self.difficulty or e.difficulty == self.difficulty)
            and (not self.mode or self.mode in e.modes)
            and (not self.tag or self.tag in e.tags)
        )


@dataclass
class Catalog:
    root: Path
    chapters: list[Chapter]
    entries: list[Entry]
    by_slug: dict[str, Entry] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_slug = {en.slug: en for en in self.entries}

    @property
    def tags(self) -> list[str]:
        return sorted({t for en in self.entries for t in en.exercise.tags})

    @property
    def modes(self) -> tuple[str, ...]:
        return MODES

    def filter(self, f: Filters) -> list[Entry]:
        return [en for en in self.entries if f.match(en)]

    def grouped(self, entries: list[Entry]) -> list[tuple[Chapter, list[Entry]]]:
        """(chapter, its entries) in course order, chapters without a listed entry left out."""
        return [(ch, mine) for ch in self.chapters if (mine := [en for en in entries if en.chapter.id == ch.id])]


def _tests_of(exercise: Exercise) -> tuple[tuple[VisibleTest, ...], int]:
    """The visible tests' source and the number of hidden ones, read with ast (tests.py imports torch)."""
    source = exercise.tests_path.read_text(encoding="utf-8")
    tree = pyast.parse(source, filename=str(exercise.tests_path))
    visible, hidden = [], 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            if node.name.startswith(EXAMPLE_PREFIX):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                text = "\n".join(source.splitlines()[start - 1:node.end_lineno])
                visible.append(VisibleTest(node.name, ast.get_docstring(node) or "", text, start))
            else:
                hidden += 1
    return tuple(visible), hidden


def _without_title(markdown: str) -> str:
    """The statement without its leading ``# title`` line: the page shows the exercise's title itself."""
    lines = markdown.lstrip("\n").splitlines()
    return "\n".join(lines[1:]) if lines and lines[0].startswith("# ") else markdown


# The paragraph most statements end with says how to judge from a terminal ("Run the visible examples with
# `python practice/judge.py test ID --run`, then submit with `python practice/judge.py test ID`."). The CLI
# prints it as written; on the site, where Run and Submit are buttons beside the statement, it says that
# instead (the commands stay in the page's "Run locally" panel). Only a whole paragraph naming this exercise.
_SP = r"(?:[ \t]+|[ \t]*\n[ \t]*)"  # the words' spacing: spaces, or a line break (never a blank line)
_CLI_CLOSING = (r"(?:\A|(?<=\n\n))Run{_}the{_}visible{_}examples{_}with{_}`python practice/judge\.py test {id} --run`,"
                r"{_}then{_}submit{_}with{_}`python practice/judge\.py test {id}`\.[ \t]*(?=\n[ \t]*\n|\s*\Z)")
SITE_CLOSING = ("Press **Run** to check the visible examples, then **Submit** to run every test. To judge it on "
                "your own machine instead, the commands are under **Run locally**, below.")


def for_the_site(markdown: str, slug: str) -> str:
    """The statement as the site says it: its closing paragraph about the terminal becomes one about the page's
    buttons (see ``_CLI_CLOSING``); everything else as written."""
    pattern = _CLI_CLOSING.format(_=_SP, id=re.escape(slug))
    return re.sub(pattern, lambda _m: SITE_CLOSING, markdown)


def build_catalog(root: Path) -> Catalog:
    chapters = load_chapters(root)
    by_id = {c.id: c for c in chapters}
    exercises = list_exercises(root)
    entries = []
    for i, e in enumerate(exercises):
        visible, hidden = _tests_of(e)
        entries.append(Entry(
            exercise=e, chapter=by_id[e.chapter],
            statement_html=markdown_html(for_the_site(_without_title(e.statement), e.slug)),
            visible_tests=visible, hidden_count=hidden,
            prev=exercises[i - 1].slug if i > 0 else None,
            next=exercises[i + 1].slug if i + 1 < len(exercises) else None,
        ))
    return Catalog(root=root, chapters=chapters, entries=entries)


def _signature(root: Path) -> tuple:
    """What the catalog depends on: every file of the exercises folder and one level below, with its mtime."""
    out = []
    for p in sorted(root.glob("*")) + sorted(root.glob("*/*")):
        try:
            out.append((str(p), p.stat().st_mtime_ns))
        except OSError:
            continue
    return tuple(out)


class CatalogCache:
    """One catalog per app, rebuilt when the exercises folder changes."""

    def __init__(self, root: str | Path | None):
        self.root = Path(root) if root else default_exercises_dir()
        self._lock = threading.Lock()
        self._sig: tuple | None = None
        self._catalog: Catalog | None = None

    @property
    def signature(self) -> tuple | None:
        return self._sig

    def get(self) -> Catalog:
        sig = _signature(self.root)
        with self._lock:
            if self._catalog is None or sig != self._sig:
                self._catalog, self._sig = build_catalog(self.root), sig
            return self._catalog
