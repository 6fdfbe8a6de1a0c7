"""Server-side sessions: what a session cookie means is kept in the ``sessions`` table, so the server can end it.

The signed cookie (Flask's) carries a random session key (256 bits) and the CSRF token, nothing else; the
table holds the key's SHA-256, the user and when the session ends (``SESSION_DAYS`` after logging in). A
cookie whose row is gone logs nobody in, whatever its signature: logging out deletes the row, a password
change and ``users disable`` delete every row of the user. A stolen cookie therefore dies with the session
it belongs to, and nothing in the database logs anyone in.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from sqlalchemy import delete, select

from .db import Database, utcnow
from .models import LoginSession, User


def _hash(key: str) -> str:
    """The key's SHA-256 hex (as every other secret of the site is stored)."""
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()


def start_session(db: Database, user_id: int, lifetime: dt.timedelta) -> str:
    """A new session of ``user_id``; its key (for the cookie). Sessions past their end are swept here."""
    key = secrets.token_urlsafe(32)
    now = utcnow()
    with db.session() as s:
        s.execute(delete(LoginSession).where(LoginSession.expires_at < now))
        s.add(LoginSession(user_id=user_id, key_hash=_hash(key), created_at=now, expires_at=now + lifetime))
    return key


def session_user(db: Database, key: object) -> tuple[int, User] | None:
    """The session's row id and its user, if the session with this key is live and the user not disabled."""
    if not isinstance(key, str) or not 20 <= len(key) <= 100:
        return None
    with db.session() as s:
        row = s.scalar(select(LoginSession).where(LoginSession.key_hash == _hash(key)))
        if row is None or row.expires_at < utcnow() or row.user.disabled:
            return None
        return row.id, row.user


def session_alive(db: Database, session_id: int) -> bool:
    """Whether the session with this row id is still live (for a long request that re-checks its credentials)."""
    with db.session() as s:
        row = s.get(LoginSession, session_id)
        return row is not None and row.expires_at >= utcnow() and not row.user.disabled


def end_session(db: Database, key: object) -> None:
    """Log this session out (nothing happens for an unknown key)."""
    if isinstance(key, str) and len(key) <= 100:
        with db.session() as s:
            s.execute(delete(LoginSession).where(LoginSession.key_hash == _hash(key)))


def end_user_sessions(db: Database, user_id: int) -> int:
    """Log every session of the user out; how many there were."""
    with db.session() as s:
        return s.execute(delete(LoginSession).where(LoginSession.user_id == user_id)).rowcount
