"""Login throttling: at most so many wrong passwords per account and per address in a sliding window.

Why a table in the database and not Flask-Limiter: Flask-Limiter keeps its counters in memory (one count per
gunicorn worker: four workers, four times the guesses) unless it is given Redis, Memcached or MongoDB, none
of which a deployment here has; the database is shared by every worker and by the embedded default
(SQLite) alike. And the rule counts failures only (a learner who logs in often is never slowed), which the
table gives directly.

How one password check goes (``LoginThrottle.attempt``): a row is written first and committed, then the
rows of that account and of that address in the window are counted. Over a limit: the row is removed (a
refused try does not lengthen the wait) and ``Throttled`` says how long until the oldest counted failure
leaves the window. Otherwise the password is checked; a right one deletes the account's failures from
that address (``succeeded``), a wrong one leaves its row, which counts. Because every check is written
before it is counted, concurrent guesses cannot slip past the limit together: of N at once, each sees at
least the ones committed before it.

An address shared by a class (one NAT) gets a higher limit than an account. Behind a reverse proxy the
address is the proxy's unless ``TRUSTED_PROXIES`` says how many proxies' ``X-Forwarded-For`` to believe.

What is one account and one address (``account_key``, ``address_key``): the name as the login reads it (spaces at
either end stripped before anything is cut, so ``"   alice"`` is alice's count, not another's); an IPv4 address
as it is (an IPv4-mapped IPv6 ``::ffff:a.b.c.d`` is its IPv4 address), an IPv6 address by its /64, the least
block a provider hands one household or one host (one machine can take any of 2^64 addresses in it).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import math
from dataclasses import dataclass

from sqlalchemy import delete, func, select

from .db import Database, utcnow
from .models import LoginFailure


class Throttled(Exception):
    """Too many wrong passwords lately for this account or from this address."""

    def __init__(self, retry_after: int):
        super().__init__(f"retry after {retry_after} s")
        self.retry_after = retry_after

    @property
    def message(self) -> str:
        minutes = max(1, math.ceil(self.retry_after / 60))
        return (f"Too many wrong passwords for this account or from this address: try again in {minutes} minute"
                f"{'s' if minutes != 1 else ''} (or ask the course staff for a one-time login link).")


@dataclass
class LoginThrottle:
    db: Database
    per_account: int = 10
    per_address: int = 100
    window_s: float = 900.0

    @classmethod
    def from_app_config(cls, db: Database, config) -> LoginThrottle:
        return cls(db, per_account=int(config["LOGIN_FAILURES_PER_ACCOUNT"]),
                   per_address=int(config["LOGIN_FAILURES_PER_ADDRESS"]),
                   window_s=float(config["LOGIN_WINDOW_SECONDS"]))

    def attempt(self, username: str, address: str | None) -> int:
        """Record a password check about to be made; its row id, or ``Throttled``."""
        name, addr = account_key(username), address_key(address)
        now = utcnow()
        since = now - dt.timedelta(seconds=self.window_s)
        # write_lock: on SQLite a transaction that reads and then writes fails at once ("database is locked")
        # when another writer committed in between; these take the write lock first (BEGIN IMMEDIATE)
        with self.db.session(write_lock=True) as s:
            s.execute(delete(LoginFailure).where(LoginFailure.at < since))  # the window's past is forgotten
            row = LoginFailure(username=name, address=addr, at=now)
            s.add(row)
            s.flush()
            row_id = row.id
        with self.db.session(write_lock=True) as s:
            wait = 0.0
            for column, value, limit in ((LoginFailure.username, name, self.per_account),
                                         (LoginFailure.address, addr, self.per_address)):
                others = (column == value, LoginFailure.at >= since, LoginFailure.id != row_id)
                n = s.scalar(select(func.count()).select_from(LoginFailure).where(*others)) or 0
                if n >= limit:  # the (n - limit + 1)-th oldest must leave the window before one more is allowed
                    oldest = s.scalar(select(LoginFailure.at).where(*others).order_by(LoginFailure.at)
                                      .offset(n - limit).limit(1))
                    wait = max(wait, (oldest - since).total_seconds() if oldest else self.window_s)
            if wait:
                s.execute(delete(LoginFailure).where(LoginFailure.id == row_id))
        if wait:
            raise Throttled(max(1, math.ceil(wait)))
        return row_id

    def succeeded(self, row_id: int, username: str, address: str | None) -> None:
        """The password was right: this check and the account's earlier failures from this address (the
        person who mistyped it) are forgotten; failures from elsewhere stay, so logging in never resets the
        count of someone guessing from another address."""
        with self.db.session(write_lock=True) as s:
            s.execute(delete(LoginFailure).where(
                (LoginFailure.id == row_id) | (LoginFailure.username == account_key(username)) &
                (LoginFailure.address == address_key(address))))


IPV6_BLOCK = 64  # the prefix length of the IPv6 block counted as one address


def _key(value: object) -> str:
    """A name or address to count under: stripped (before it is cut, as the login strips a username), printable
    characters only (PostgreSQL refuses a NUL byte in text), lowercased, at most 64."""
    text = value.strip()[:256] if isinstance(value, str) else ""
    return "".join(ch for ch in text if ch.isprintable()).strip().lower()[:64]


def account_key(username: object) -> str:
    """The account a password check counts against: the username as ``web.auth.find_user`` reads it."""
    return _key(username)


def address_key(address: str | None) -> str:
    """The address a password check counts against: IPv4 as it is, IPv6 by its /64 (``2001:db8:0:1::/64``)."""
    try:
        ip = ipaddress.ip_address((address or "").strip().strip("[]"))
    except ValueError:
        return _key(address or "unknown")
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/{IPV6_BLOCK}", strict=False))
    return str(ip)
