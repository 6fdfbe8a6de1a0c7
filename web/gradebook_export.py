"""The gradebook as the page's cells, the CSV and the JSON show it: one set of values, so they agree.

The CSV has one row per learner: ``username``, ``group``, then per exercise (the page's columns, in order)
four columns:

- ``<slug>``: the best result (``accepted``, else the newest graded result, e.g. ``wrong_answer``; empty: no
  graded submission),
- ``<slug> attempts``: how many graded submissions (done, not run-only),
- ``<slug> accepted at``: when the first accepted one was submitted, ISO 8601 UTC as the API writes times
  (``2026-12-01T09:30:00Z``),
- ``<slug> timing``: the best an accepted one was against the filtered assignment (without an assignment filter,
  the worst of those against any): ``on_time``, ``late``, ``after``, or empty (not accepted, or against none),

then per assignment ``<name> solved (of <total>)`` (how many of its exercises are accepted) and ``<name> late``
(how many of those have no accepted submission on time). The page's cells carry the same values in data
attributes (``data-result``, ``data-attempts``, ``data-accepted-at``, ``data-timing``; ``data-solved``,
``data-late``). A text cell that a spreadsheet would read as a formula (``= + - @``) gets a leading ``'``.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from markupsafe import Markup, escape

from .gradebook import Cell, Column, Gradebook, Row, Standing
from .submissions import iso

_MARKS = {"on_time": "", "late": "<strong>L</strong>", "after": "<strong>A</strong>", "": ""}


def cell_values(cell: Cell) -> tuple[str, str, str, str]:
    """A cell as four strings: result, attempts, accepted at, timing."""
    return cell.result or "", str(cell.attempts), iso(cell.accepted_at) or "", cell.timing or ""


def standing_values(st: Standing) -> tuple[str, str]:
    return str(st.solved), str(st.late)


def cells_html(row: Row, columns: list[Column]) -> Markup:
    """A row's exercise cells for the page (built here, not in the template: 15,000 cells render in tens of ms):
    the CSV's four values as data attributes, a mark (✓ accepted, with L late or A after; ✗ tried) and a title."""
    out = []
    for c in columns:
        cell = row.cells[c.slug]
        result, attempts, at, timing = (escape(v) for v in cell_values(cell))
        attrs = (f'data-exercise="{escape(c.slug)}" data-result="{result}" data-attempts="{attempts}" '
                 f'data-accepted-at="{at}" data-timing="{timing}"')
        if not cell.attempts:
            out.append(f"<td {attrs}></td>")
            continue
        title = f"{result}, {attempts} graded" + (f", first accepted {at}" if at else "") + (
            f", {timing}" if timing else "")
        if cell.mark == "accepted":
            klass, mark = "accepted late" if cell.late else "accepted", "✓" + _MARKS[cell.timing or ""]
        else:
            klass, mark = "tried", "✗"
        out.append(f'<td {attrs} class="{klass}" title="{title}">{mark}</td>')
    return Markup("".join(out))


def header(gb: Gradebook) -> list[str]:
    out = ["username", "group"]
    for c in gb.columns:
        out += [c.slug, f"{c.slug} attempts", f"{c.slug} accepted at", f"{c.slug} timing"]
    for a in gb.assignments:
        out += [f"{a.name} solved (of {len(a.exercises)})", f"{a.name} late"]
    return out


def table(gb: Gradebook) -> list[list[str]]:
    """The CSV's rows, header first."""
    rows = [header(gb)]
    for r in gb.rows:
        line = [r.username, r.group]
        for c in gb.columns:
            line += cell_values(r.cells[c.slug])
        for st in r.standings:
            line += standing_values(st)
        rows.append(line)
    return rows


def _safe(value: str) -> str:
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def csv_text(gb: Gradebook) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    for line in table(gb):
        w.writerow([_safe(v) for v in line])
    return buf.getvalue()


def json_body(gb: Gradebook) -> dict[str, Any]:
    f = gb.filter
    return {
        "filter": {"assignment": f.assignment, "chapter": f.chapter, "group": f.group},
        "exercises": [{"id": c.slug, "title": c.title, "chapter": c.chapter} for c in gb.columns],
        "assignments": [{"id": a.id, "name": a.name, "exercises": a.exercises, "opens_at": iso(a.opens_at),
                         "due_at": iso(a.due_at), "late_until": iso(a.late_until)} for a in gb.assignments],
        "learners": [{
            "username": r.username, "group": r.group,
            "cells": {slug: {"result": c.result, "attempts": c.attempts, "accepted_at": iso(c.accepted_at),
                             "timing": c.timing} for slug, c in r.cells.items()},
            "assignments": [{"id": st.assignment_id, "solved": st.solved, "total": st.total, "late": st.late}
                            for st in r.standings],
        } for r in gb.rows],
    }
