"""Admin commands: ``flask --app web db|users|runners|queue|assignments|similarity ...`` (assignments:
``assignments_cli.py``, similarity: ``similarity_cli.py``).

Tokens and links are printed once and stored hashed: copy them when they are shown.
"""

from __future__ import annotations

import re
import sys

import click
from flask import Flask, current_app
from flask.cli import AppGroup
from sqlalchemy import select

from . import auth
from . import db as dbm
from .db import utcnow
from .grading import get_grading
from .models import QUEUED, RUNNING, Runner, Submission, User

db_cli = AppGroup("db", help="The database schema (Alembic migrations).")
users_cli = AppGroup("users", help="Learner and staff accounts, invitations, API tokens.")
runners_cli = AppGroup("runners", help="GPU runners and their tokens.")
queue_cli = AppGroup("queue", help="The submissions queue.")


def _base_url() -> str:
    return (current_app.config.get("PUBLIC_URL") or "http://127.0.0.1:5000").rstrip("/")


def _fail(message: str) -> None:
    raise click.ClickException(message)


def _said(found: bool, done: str, missing: str) -> None:
    """Print ``done``, or fail with ``missing`` when the command found nothing to act on."""
    if not found:
        _fail(missing)
    click.echo(done)


# --- db -------------------------------------------------------------------------------------------------------


@db_cli.command("upgrade")
@click.argument("revision", default="head")
def db_upgrade(revision: str):
    """Apply the migrations up to REVISION (default: the newest)."""
    dbm.upgrade(get_grading().db.url, revision)
    click.echo(f"database at {dbm.current_revision(get_grading().db)}")


@db_cli.command("downgrade")
@click.argument("revision")
def db_downgrade(revision: str):
    """Undo migrations down to REVISION ('base' drops every table)."""
    dbm.downgrade(get_grading().db.url, revision)
    click.echo(f"database at {dbm.current_revision(get_grading().db) or 'base'}")


@db_cli.command("current")
def db_current():
    """The schema revision of the database, and the one this code needs."""
    click.echo(f"database: {dbm.current_revision(get_grading().db) or 'base (empty)'}; code: {dbm.head_revision()}")


# --- users ----------------------------------------------------------------------------------------------------


def _read_password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\n")
    return click.prompt("Password", hide_input=True, confirmation_prompt=True)


@users_cli.command("create")
@click.argument("username")
@click.option("--staff", is_flag=True, help="Staff see every submission and the staff page.")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin.")
@click.option("--no-password", is_flag=True, help="No password: log in with a link (users login-link).")
def users_create(username: str, staff: bool, password_stdin: bool, no_password: bool):
    """Create an account."""
    password = None if no_password else _read_password(password_stdin)
    try:
        user = auth.create_user(get_grading().db, username, password, staff=staff)
    except auth.AccountError as e:
        _fail(str(e))
    click.echo(f"created {'staff' if staff else 'learner'} {user.username}")


@users_cli.command("password")
@click.argument("username")
@click.option("--password-stdin", is_flag=True)
@click.option("--keep-tokens", is_flag=True, help="Leave the user's API tokens working (default: revoke them).")
def users_password(username: str, password_stdin: bool, keep_tokens: bool):
    """Set a user's password: every session of theirs ends, and their API tokens are revoked unless kept."""
    try:
        auth.set_password(get_grading().db, username, _read_password(password_stdin), revoke_tokens=not keep_tokens)
    except auth.AccountError as e:
        _fail(str(e))
    click.echo(f"password of {username} changed; sessions ended; API tokens {'kept' if keep_tokens else 'revoked'}")


@users_cli.command("list")
def users_list():
    with get_grading().db.session() as s:
        for u in s.scalars(select(User).order_by(User.username)):
            flags = ",".join(f for f, on in (("staff", u.is_staff), ("disabled", u.disabled),
                                               ("no-password", not u.password_hash)) if on)
            click.echo(f"{u.username:24} {u.group_name or '-':16} {flags}".rstrip())


GROUP_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$")


@users_cli.command("group")
@click.argument("username")
@click.argument("group")
def users_group(username: str, group: str):
    """Put a learner in GROUP (a course's section, the gradebook's filter); an empty GROUP ("") clears it."""
    group = group.strip()
    if group and not GROUP_RE.match(group):
        _fail("A group is 1 to 64 characters: letters, digits, spaces, '.', '_' or '-', starting with a letter "
              "or digit.")
    with get_grading().db.session() as s:
        user = s.scalar(select(User).where(User.username == username.strip().lower()))
        if user is None:
            _fail(f"No user {username!r}.")
        user.group_name = group
    click.echo(f"{username} is in group {group}" if group else f"{username} is in no group")


@users_cli.command("disable")
@click.argument("username")
def users_disable(username: str):
    """Lock an account out (its sessions end, its tokens stop working)."""
    _said(auth.disable_user(get_grading().db, username), f"disabled {username}", f"No user {username!r}.")


@users_cli.command("invite")
@click.option("--staff", is_flag=True, help="The account made from the link is staff.")
@click.option("--hours", default=72.0, show_default=True, help="How long the link works.")
def users_invite(staff: bool, hours: float):
    """Print a one-time link with which someone creates their account."""
    token = auth.create_link(get_grading().db, kind="invite", hours=hours, staff=staff, created_by="admin")
    click.echo(f"{_base_url()}/invite/{token}")


@users_cli.command("login-link")
@click.argument("username")
@click.option("--hours", default=24.0, show_default=True)
def users_login_link(username: str, hours: float):
    """Print a one-time login link for an existing user."""
    try:
        token = auth.create_link(get_grading().db, kind="login", hours=hours, username=username, created_by="admin")
    except auth.AccountError as e:
        _fail(str(e))
    click.echo(f"{_base_url()}/login/link/{token}")


@users_cli.command("token")
@click.argument("username")
@click.option("--name", default="command line", show_default=True)
def users_token(username: str, name: str):
    """Print a new API token for USERNAME (shown once)."""
    try:
        click.echo(auth.create_api_token(get_grading().db, username, name))
    except auth.AccountError as e:
        _fail(str(e))


# --- runners --------------------------------------------------------------------------------------------------


@runners_cli.command("add")
@click.argument("name")
def runners_add(name: str):
    """Register a runner; prints its token once (python -m runner --server URL --token TOKEN)."""
    try:
        click.echo(auth.create_runner(get_grading().db, name))
    except auth.AccountError as e:
        _fail(str(e))


@runners_cli.command("remove")
@click.argument("name")
def runners_remove(name: str):
    """Disable a runner's token (its jobs in hand go back to the queue when their leases expire)."""
    _said(auth.remove_runner(get_grading().db, name), f"removed {name}", f"No runner {name!r}.")


@runners_cli.command("list")
def runners_list():
    now = utcnow()
    with get_grading().db.session() as s:
        for r in s.scalars(select(Runner).where(Runner.disabled.is_(False)).order_by(Runner.name)):
            seen = f"{(now - r.last_seen_at).total_seconds():.0f} s ago" if r.last_seen_at else "never"
            click.echo(f"{r.name:20} modes={r.modes or '-':10} gpu={r.gpu or 'none':24} last seen {seen}")


# --- queue ----------------------------------------------------------------------------------------------------


@queue_cli.command("list")
@click.option("--all", "show_all", is_flag=True, help="The last 50 of every state, not just queued and running.")
def queue_list(show_all: bool):
    with get_grading().db.session() as s:
        q = select(Submission).order_by(Submission.id.desc()).limit(50)
        if not show_all:
            q = q.where(Submission.state.in_((QUEUED, RUNNING)))
        rows = list(s.scalars(q))
        for j in reversed(rows):
            runner = j.runner.name if j.runner else "-"
            click.echo(f"{j.id:6} {j.state:9} {j.result or '':15} {j.exercise:28} {j.mode:3} "
                       f"user={j.user.username} attempts={j.attempts} runner={runner}")
        if not rows:
            click.echo("the queue is empty")


@queue_cli.command("requeue")
@click.argument("job_id", type=int)
def queue_requeue(job_id: int):
    if not get_grading().queue.requeue(job_id):
        _fail(f"No job {job_id}.")
    click.echo(f"job {job_id} queued again")


@queue_cli.command("cancel")
@click.argument("job_id", type=int)
def queue_cancel(job_id: int):
    state = get_grading().queue.cancel(job_id)
    if not state:
        _fail(f"No job {job_id}.")
    click.echo(f"job {job_id} is {state}")


@queue_cli.command("pause")
def queue_pause():
    """Stop taking submissions (503 with Retry-After); the queue keeps being judged."""
    get_grading().queue.set_intake_paused(True)
    click.echo("intake paused")


@queue_cli.command("resume")
def queue_resume():
    get_grading().queue.set_intake_paused(False)
    click.echo("intake open")


@queue_cli.command("reap")
def queue_reap():
    """Return expired leases to the queue now (the site does it every few seconds by itself)."""
    requeued, failed = get_grading().queue.reap()
    click.echo(f"requeued {requeued}, ended as internal_error {failed}")


def register_commands(app: Flask) -> None:
    from .assignments_cli import assignments_cli
    from .similarity_cli import similarity_cli

    for group in (db_cli, users_cli, runners_cli, queue_cli, assignments_cli, similarity_cli):
        app.cli.add_command(group)
