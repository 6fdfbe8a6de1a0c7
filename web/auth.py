"""Who is asking: passwords, tokens, sessions and CSRF.

- Passwords are hashed with scrypt (``werkzeug.security``) and must not be easy to guess (``web/passwords.py``);
  wrong ones are throttled per account and per address (``web/throttle.py``). Tokens, session keys and one-time
  links are random (256 bits) and stored as their SHA-256 only, so the database never holds anything that logs
  someone in.
- A learner authenticates with the session cookie (the site's pages; a server-side session, ``web/sessions.py``,
  that logging out, a password change and ``users disable`` end) or ``Authorization: Bearer <token>`` (the
  command line). A wrong bearer token is refused even if a cookie is present.
- Cookie-authenticated requests that change something need the session's CSRF token (header
  ``X-CSRF-Token`` or form field ``csrf_token``); bearer-token requests need none (a browser never adds
  them on its own).
- The pages that need a login (the Account page, the staff page) take the session cookie only: a bearer token
  there is refused (``page_user``).
- Runners authenticate with their own tokens (``msr_...``), learners' tokens (``msu_...``) never work there.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from typing import Any

from flask import abort, current_app, g, redirect, request, session, url_for
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash

from . import sessions
from .db import Database, utcnow
from .errors import ApiError
from .grading import get_grading
from .models import ApiToken, Invite, Runner, User
from .passwords import PASSWORD_MAX, password_problem
from .throttle import LoginThrottle

USER_TOKEN_PREFIX = "msu_"
RUNNER_TOKEN_PREFIX = "msr_"
LINK_PREFIX = "msl_"
USERNAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
TOKEN_MAX = 200  # longer Authorization values are refused before any lookup


class AccountError(ValueError):
    """Bad input to an account operation; the message says what is wrong."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def new_token(prefix: str) -> tuple[str, str]:
    token = prefix + secrets.token_urlsafe(32)
    return token, hash_token(token)


def hash_password(password: str) -> str:
    return generate_password_hash(password, method="scrypt")


def check_username(username: str) -> str:
    name = (username or "").strip().lower()
    if not USERNAME_RE.match(name):
        raise AccountError("A username is 1 to 64 characters: lowercase letters, digits, '.', '_' or '-', "
                           "starting with a letter or digit.")
    return name


def check_password(password: str, username: str = "") -> str:
    """``password`` if it may be ``username``'s password, else ``AccountError`` saying why not."""
    problem = password_problem(password, username)
    if problem:
        raise AccountError(problem)
    return password


# --- operations (used by the pages and the admin commands) ---------------------------------------------------


def _add_user(s: Session, name: str, password: str | None, staff: bool) -> User:
    if s.scalar(select(User.id).where(User.username == name)) is not None:
        raise AccountError(f"The username {name!r} is taken.")
    user = User(username=name, password_hash=hash_password(password) if password else None, is_staff=staff)
    s.add(user)
    s.flush()
    return user


def create_user(db: Database, username: str, password: str | None, *, staff: bool = False) -> User:
    name = check_username(username)
    if password is not None:
        check_password(password, name)
    try:
        with db.session() as s:
            return _add_user(s, name, password, staff)
    except IntegrityError:  # the same name created at the same moment
        raise AccountError(f"The username {name!r} is taken.") from None


def set_password(db: Database, username: str, password: str, *, revoke_tokens: bool) -> None:
    """A new password; every session of the user ends, and with ``revoke_tokens`` every API token too."""
    name = check_username(username)
    check_password(password, name)
    with db.session() as s:
        user = s.scalar(select(User).where(User.username == name))
        if user is None:
            raise AccountError(f"No user {username!r}.")
        user.password_hash = hash_password(password)
        user_id = user.id
        if revoke_tokens:
            s.execute(update(ApiToken).where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
                      .values(revoked_at=utcnow()))
    sessions.end_user_sessions(db, user_id)


def find_user(db: Database, username: str) -> User | None:
    """The user of that name; None for a string that cannot be a username (never a query with a NUL byte, which
    PostgreSQL refuses)."""
    name = (username if isinstance(username, str) else "").strip().lower()
    if not USERNAME_RE.match(name):
        return None
    with db.session() as s:
        return s.scalar(select(User).where(User.username == name))


def verify_login(db: Database, username: str, password: str) -> User | None:
    user = find_user(db, username)
    if user is None or user.disabled or not user.password_hash or not isinstance(password, str) \
            or len(password) > PASSWORD_MAX:
        check_password_hash(_DUMMY_HASH, "x")  # the same time whether or not the user exists
        return None
    return user if check_password_hash(user.password_hash, password) else None


_DUMMY_HASH = generate_password_hash("not a password", method="scrypt")


def create_api_token(db: Database, username: str, name: str = "") -> str:
    token, digest = new_token(USER_TOKEN_PREFIX)
    with db.session() as s:
        user = s.scalar(select(User).where(User.username == check_username(username)))
        if user is None:
            raise AccountError(f"No user {username!r}.")
        s.add(ApiToken(user_id=user.id, name=name[:64], token_hash=digest, prefix=token[:10]))
    return token


def revoke_api_token(db: Database, user_id: int, token_id: int) -> bool:
    with db.session() as s:
        return bool(s.execute(update(ApiToken).where(ApiToken.id == token_id, ApiToken.user_id == user_id,
                                                     ApiToken.revoked_at.is_(None))
                              .values(revoked_at=utcnow())).rowcount)


def create_link(db: Database, *, kind: str, hours: float = 72.0, staff: bool = False, username: str | None = None,
                created_by: str = "") -> str:
    """A one-time link token: ``invite`` (creates an account) or ``login`` (logs ``username`` in once)."""
    token, digest = new_token(LINK_PREFIX)
    with db.session() as s:
        user_id = None
        if kind == "login":
            user_id = s.scalar(select(User.id).where(User.username == check_username(username or "")))
            if user_id is None:
                raise AccountError(f"No user {username!r}.")
        s.add(Invite(token_hash=digest, kind=kind, user_id=user_id, is_staff=staff, created_by=created_by,
                     expires_at=utcnow() + dt.timedelta(hours=hours)))
    return token


def find_link(db: Database, token: str, kind: str) -> Invite | None:
    if not isinstance(token, str) or len(token) > TOKEN_MAX:
        return None
    with db.session() as s:
        link = s.scalar(select(Invite).where(Invite.token_hash == hash_token(token), Invite.kind == kind))
        if link is None or link.used_at is not None or link.expires_at < utcnow():
            return None
        return link


def accept_invite(db: Database, token: str, username: str, password: str) -> User:
    """The account an invitation makes. The invitation is used up in the same transaction as the account is
    created, so a refused username (taken, invalid) or password leaves it usable."""
    name = check_username(username)
    check_password(password, name)
    link = find_link(db, token, "invite")
    if link is None:
        raise AccountError("This invitation is unknown, used or expired.")
    try:
        with db.session(write_lock=True) as s:
            user = _add_user(s, name, password, link.is_staff)
            now = utcnow()
            used = s.execute(update(Invite).where(Invite.id == link.id, Invite.used_at.is_(None),
                                                  Invite.expires_at >= now).values(used_at=now)).rowcount
            if used != 1:
                raise AccountError("This invitation was just used.")  # rolls the account back too
            return user
    except IntegrityError:  # the same name created at the same moment elsewhere: the invitation is untouched
        raise AccountError(f"The username {name!r} is taken.") from None


def use_link(db: Database, token: str, kind: str) -> Invite | None:
    """Consume a one-time link (atomically: two uses at once, one wins)."""
    link = find_link(db, token, kind)
    if link is None:
        return None
    with db.session() as s:
        n = s.execute(update(Invite).where(Invite.id == link.id, Invite.used_at.is_(None))
                      .values(used_at=utcnow())).rowcount
    return link if n == 1 else None


def create_runner(db: Database, name: str) -> str:
    name = check_username(name)
    token, digest = new_token(RUNNER_TOKEN_PREFIX)
    with db.session() as s:
        if s.scalar(select(Runner.id).where(Runner.name == name)) is not None:
            raise AccountError(f"A runner named {name!r} exists (remove it first to replace its token).")
        s.add(Runner(name=name, token_hash=digest))
    return token


def remove_runner(db: Database, name: str) -> bool:
    """Disable a runner's token and free its name for a new registration; False if there is no such runner."""
    with db.session() as s:
        row = s.scalar(select(Runner).where(Runner.name == name.lower()))
        if row is None:
            return False
        row.disabled = True
        row.name = f"{row.name}~removed{row.id}"[:64]
    return True


def disable_user(db: Database, username: str) -> bool:
    """Lock an account out (its sessions end, its tokens stop working); False if there is no such user."""
    with db.session() as s:
        user_id = s.scalar(select(User.id).where(User.username == username.lower()))
        if user_id is None:
            return False
        s.execute(update(User).where(User.id == user_id).values(disabled=True))
    sessions.end_user_sessions(db, user_id)
    return True


# --- requests -------------------------------------------------------------------------------------------------


def _db() -> Database:
    return get_grading().db


def _bearer() -> str | None:
    """The bearer token, or None when there is no Authorization header. A malformed one is a 401."""
    raw = request.headers.get("Authorization")
    if raw is None:
        return None
    scheme, _, token = raw.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > TOKEN_MAX:
        raise ApiError(401, "unauthorized", "The Authorization header must be 'Bearer <token>'.")
    return token


def current_user() -> User | None:
    """The user of this request (cookie or bearer token), or None. A bad bearer token raises 401.

    ``g.credential`` names what authenticated it, ``("token", id)`` or ``("session", id)``: a long request (an
    event stream) asks ``credential_alive`` again later, and stops once the token is revoked or the session
    ended."""
    if "user" in g:
        return g.user
    g.user, g.via_token, g.credential = None, False, None
    token = _bearer()
    if token is not None:
        if not token.startswith(USER_TOKEN_PREFIX):
            raise ApiError(401, "unauthorized", "That token is not a learner's API token.")
        with _db().session() as s:
            row = s.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
            if row is None or row.revoked_at is not None or row.user.disabled:
                raise ApiError(401, "unauthorized", "Unknown or revoked API token.")
            g.user, g.via_token, g.credential = row.user, True, ("token", row.id)
            token_id, last_used = row.id, row.last_used_at
        now = utcnow()
        if last_used is None or now - last_used > dt.timedelta(minutes=1):
            # a write of its own, with the write lock taken first: on SQLite a read transaction that then writes
            # fails at once ("database is locked") when a runner's claim committed in between
            with _db().session(write_lock=True) as s:
                s.execute(update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=now))
        return g.user
    if "sid" in session:
        found = sessions.session_user(_db(), session.get("sid"))
        if found is not None:
            g.credential, g.user = ("session", found[0]), found[1]
        else:  # logged out elsewhere, expired, or the user disabled: this cookie is nobody's now
            session.clear()
    return g.user


def credential_alive(credential: tuple[str, int] | None, db: Database | None = None) -> bool:
    """Whether what authenticated a request (``g.credential``) still would: the token not revoked, the session
    not ended, the user not disabled."""
    if credential is None:
        return False
    db = db or _db()
    kind, row_id = credential
    if kind == "session":
        return sessions.session_alive(db, row_id)
    with db.session() as s:
        row = s.get(ApiToken, row_id)
        return row is not None and row.revoked_at is None and not row.user.disabled


def credential_check() -> Callable[[], bool]:
    """For a long-lived response (an event stream): a check, to call now and then, that the credential this
    request came with still holds (``credential_alive``). A database that cannot be asked counts as yes (the
    caller retries)."""
    db, credential = _db(), g.get("credential")

    def still_valid() -> bool:
        try:
            return credential_alive(credential, db)
        except SQLAlchemyError:
            return True

    return still_valid


def login_session(user: User) -> None:
    """Log ``user`` in on this browser: a new server-side session (a new key, so a key planted before the login
    is worth nothing) and a new CSRF token."""
    session.clear()
    days = float(current_app.config["SESSION_DAYS"])
    session["sid"] = sessions.start_session(_db(), user.id, dt.timedelta(days=days))
    session["csrf"] = secrets.token_urlsafe(24)
    session.permanent = True


def logout_session() -> None:
    """End this browser's session on the server (its cookie then logs nobody in, even replayed) and forget it."""
    sessions.end_session(_db(), session.get("sid"))
    session.clear()


def password_login(username: str, password: str) -> User | None:
    """The user whose password this is, or None; ``Throttled`` when this account or this address has had too
    many wrong passwords lately (then the password is not even checked)."""
    throttle = LoginThrottle.from_app_config(_db(), current_app.config)
    address = request.remote_addr
    attempt = throttle.attempt(username if isinstance(username, str) else "", address)
    user = verify_login(_db(), username, password)
    if user is not None:
        throttle.succeeded(attempt, user.username, address)
    return user


def csrf_token() -> str:
    """This session's CSRF token (made on first use); the answer that shows it is not stored by any cache."""
    g.csrf_shown = True
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(24)
    return session["csrf"]


def check_csrf(status: int = 403) -> None:
    """For cookie-authenticated requests that change something: the session's CSRF token, sent as the
    X-CSRF-Token header or the form's ``csrf_token``. Refused with ``status``: 403 (the API, JSON) or 400 (a
    page's form, which has expired)."""
    if request.method in ("GET", "HEAD", "OPTIONS") or g.get("via_token"):
        return
    sent = request.headers.get("X-CSRF-Token") or request.form.get("csrf_token") or ""
    want = session.get("csrf") or ""
    if not want or not hmac.compare_digest(str(sent).encode(), want.encode()):
        if status == 403:
            raise ApiError(403, "csrf_failed", "Missing or wrong CSRF token (send the X-CSRF-Token header; the "
                           "token is in GET /api/v1/me).")
        abort(status, "The form expired (missing or wrong CSRF token): reload the page and try again.")


def page_user() -> User | None:
    """The user of a page (the Account page, the staff page): by the session cookie only. An API token is for the
    API: on a page it is a 403, so a leaked token cannot mint its own successor on the Account page (and outlive
    being revoked), nor drive the staff forms, where a token would need no CSRF token."""
    user = current_user()
    if user is not None and g.via_token:
        abort(403, "API tokens work on the API (/api/v1/...), not on the site's pages: log in in a browser.")
    return user


def login_required(fn: Callable) -> Callable:
    """Pages: a user logged in on this browser (``page_user``), else a redirect to the login page (and back here
    afterwards)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any):
        if page_user() is None:
            return redirect(url_for("accounts.login", next=request.path))
        return fn(*args, **kw)

    return wrapper


def require_user(fn: Callable) -> Callable:
    """API endpoints: a logged-in learner (cookie + CSRF for changes) or a learner's token, else 401."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any):
        user = current_user()
        if user is None:
            raise ApiError(401, "unauthorized", "Log in, or send 'Authorization: Bearer <your API token>'.")
        check_csrf()
        return fn(*args, **kw)

    return wrapper


def current_runner() -> Runner:
    token = _bearer()
    if token is None:
        raise ApiError(401, "unauthorized", "A runner sends 'Authorization: Bearer <runner token>'.")
    if not token.startswith(RUNNER_TOKEN_PREFIX):
        raise ApiError(401, "unauthorized", "That token is not a runner token.")
    with _db().session() as s:
        runner = s.scalar(select(Runner).where(Runner.token_hash == hash_token(token)))
    if runner is None or runner.disabled:
        raise ApiError(401, "unauthorized", "Unknown or removed runner token.")
    return runner


def require_runner(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any):
        g.runner = current_runner()
        return fn(*args, **kw)

    return wrapper
