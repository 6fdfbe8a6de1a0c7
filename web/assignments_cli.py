"""``flask --app web assignments create|list|edit|delete|extend``: assignments from the command line.

Times are ISO 8601 (``2026-12-10T23:59Z``, an offset, or none: UTC). The checks are ``web/assignment_ops.py``'s,
the same as the API's and the staff pages'; a refusal is a ``click.ClickException`` saying what is wrong.
"""

from __future__ import annotations

import click
from flask.cli import AppGroup
from sqlalchemy import select

from . import assignment_ops as ops
from .api import catalog
from .grading import get_grading
from .models import Assignment

assignments_cli = AppGroup("assignments", help="Assignments: exercises with a due date, and learners' extensions.")


def _known() -> list[str]:
    return [en.slug for en in catalog().entries]


def _found(s, name: str) -> Assignment:
    a = ops.find(s, name)
    if a is None:
        raise click.ClickException(f"No assignment {name!r}.")
    return a


def _line(a: Assignment) -> str:
    late = ops.iso(a.late_until) or "no late window"
    return (f"{a.id:4} {a.name:24} opens {ops.iso(a.opens_at)} due {ops.iso(a.due_at)} late until {late} "
            f"exercises {','.join(a.exercises)}")


@assignments_cli.command("create")
@click.argument("name")
@click.option("--exercises", required=True, help="Exercise ids in order, comma-separated.")
@click.option("--opens", required=True, help="When learners see it (ISO 8601, UTC unless it says otherwise).")
@click.option("--due", required=True, help="The due time.")
@click.option("--late-until", default=None, help="Late submissions are accepted until then (after --due).")
def create(name: str, exercises: str, opens: str, due: str, late_until: str | None):
    """Create an assignment."""
    data = {"name": name, "exercises": exercises, "opens_at": opens, "due_at": due, "late_until": late_until}
    try:
        with get_grading().db.session(write_lock=True) as s:
            a = ops.apply(s, None, data, _known(), by="admin")
            click.echo(f"created {_line(a)}")
    except ops.AssignmentError as e:
        raise click.ClickException(str(e)) from None


@assignments_cli.command("list")
def listing():
    """Every assignment, by due time."""
    with get_grading().db.session() as s:
        rows = list(s.scalars(select(Assignment).order_by(Assignment.due_at, Assignment.id)))
        for a in rows:
            click.echo(_line(a))
            for username, e in ops.extensions(s, a):
                click.echo(f"     extension: {username} due {ops.iso(e.due_at)}")
        if not rows:
            click.echo("no assignments")


@assignments_cli.command("edit")
@click.argument("name")
@click.option("--name", "new_name", default=None, help="A new name.")
@click.option("--exercises", default=None, help="The exercise ids in order, comma-separated (replaces them).")
@click.option("--opens", default=None)
@click.option("--due", default=None)
@click.option("--late-until", default=None)
@click.option("--no-late", is_flag=True, help="Remove the late window.")
def edit(name: str, new_name: str | None, exercises: str | None, opens: str | None, due: str | None,
         late_until: str | None, no_late: bool):
    """Change an assignment (NAME or its id); what is not given stays."""
    if no_late and late_until:
        raise click.ClickException("Give --late-until or --no-late, not both.")
    given = {"name": new_name, "exercises": exercises, "opens_at": opens, "due_at": due, "late_until": late_until}
    data = {k: v for k, v in given.items() if v is not None}
    if no_late:
        data["late_until"] = None
    if not data:
        raise click.ClickException("Nothing to change: give --name, --exercises, --opens, --due, --late-until or "
                                   "--no-late.")
    try:
        with get_grading().db.session(write_lock=True) as s:
            a = ops.apply(s, _found(s, name), data, _known(), by="admin")
            click.echo(f"changed {_line(a)}")
    except ops.AssignmentError as e:
        raise click.ClickException(str(e)) from None


@assignments_cli.command("delete")
@click.argument("name")
def delete(name: str):
    """Delete an assignment (its extensions and recorded timings go with it; submissions stay)."""
    with get_grading().db.session() as s:
        s.delete(_found(s, name))
    click.echo(f"deleted {name}")


@assignments_cli.command("extend")
@click.argument("name")
@click.argument("username")
@click.option("--due", default=None, help="The learner's own due time.")
@click.option("--remove", is_flag=True, help="Remove the learner's extension instead.")
def extend(name: str, username: str, due: str | None, remove: bool):
    """Give USERNAME their own due time for assignment NAME (the late window moves with it)."""
    if remove == (due is not None):
        raise click.ClickException("Give --due TIME, or --remove.")
    try:
        with get_grading().db.session(write_lock=True) as s:
            a = _found(s, name)
            if remove:
                if not ops.unextend(s, a, username):
                    raise click.ClickException(f"{username} has no extension of {a.name}.")
                click.echo(f"removed the extension of {username} for {a.name}")
                return
            e = ops.extend(s, a, username, due, by="admin")
            click.echo(f"{username} is due {ops.iso(e.due_at)} for {a.name}")
    except ops.AssignmentError as e:
        raise click.ClickException(str(e)) from None
