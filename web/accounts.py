"""Account pages: log in and out, accept an invitation, one-time login links, API tokens; ``GET /api/v1/me``.

Staff create accounts (``flask --app web users create``) or invitation links (``users invite``); there is
no open sign-up. Every form carries the session's CSRF token. Every answer of these pages is
``Cache-Control: no-store``: they show secrets (a new API token, the CSRF token) or take them (passwords,
one-time links), and no browser cache or proxy should keep a copy; so is every other answer made for a logged-in
user or showing the CSRF token (``_no_store_when_personal``).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, abort, g, redirect, render_template, request, session, url_for
from sqlalchemy import select

from . import auth
from .errors import ApiError
from .grading import get_grading
from .models import ApiToken, User
from .throttle import Throttled

bp = Blueprint("accounts", __name__, template_folder="templates")


def _db():
    return get_grading().db


def _safe_next(target: str | None) -> str:
    """Only a path on this site (no scheme, no host, no '//' or backslash tricks, no control characters: a line
    break cannot go into the ``Location`` header, and would fail the answer after the login was made)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target \
            or not target.isprintable():
        return "/"
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else "/"


@bp.after_request
def _no_store(response):
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.after_app_request
def _no_store_when_personal(response):
    """Any other answer made for someone is not stored either (unless it says otherwise, as an event stream does):
    a logged-in learner's every page carries the session's CSRF token (the nav's logout form), the staff page
    everyone's submissions, the API its caller's code and verdicts. Anonymous pages and static files stay
    cacheable."""
    if g.get("user") is not None or g.get("csrf_shown"):
        response.headers.setdefault("Cache-Control", "no-store")
    return response


@bp.app_context_processor
def _template_globals():
    def user():
        try:
            return auth.current_user()
        except ApiError:  # a bad bearer token on a page: nobody
            return None

    return {"csrf_token": auth.csrf_token, "current_user": user}


@bp.route("/login", methods=["GET", "POST"])
def login():
    error, status, headers = None, 200, {}
    if request.method == "POST":
        auth.check_csrf(400)
        try:
            user = auth.password_login(request.form.get("username", ""), request.form.get("password", ""))
        except Throttled as e:
            error, status, headers = e.message, 429, {"Retry-After": str(e.retry_after)}
        else:
            if user is not None:
                auth.login_session(user)
                return redirect(_safe_next(request.form.get("next")))
            error, status = "Wrong username or password.", 401
    auth.current_user()
    next_page = _safe_next(request.form.get("next") if request.method == "POST" else request.args.get("next"))
    return render_template("server/login.html", error=error, next=next_page), status, headers


@bp.post("/logout")
def logout():
    auth.check_csrf(400)
    auth.logout_session()
    return redirect(url_for("accounts.login"))


@bp.route("/invite/<token>", methods=["GET", "POST"])
def invite(token: str):
    link = auth.find_link(_db(), token, "invite")
    if link is None:
        return render_template("server/message.html", title="Invitation",
                               message="This invitation link is unknown, used or expired. Ask the course "
                               "staff for a new one."), 404
    error = None
    if request.method == "POST":
        auth.check_csrf(400)
        password = request.form.get("password", "")
        try:
            if password != request.form.get("password2", ""):
                raise auth.AccountError("The two passwords differ.")
            user = auth.accept_invite(_db(), token, request.form.get("username", ""), password)
        except auth.AccountError as e:
            error = str(e)
        else:
            auth.login_session(user)
            return redirect("/")
    return render_template("server/invite.html", error=error, staff=link.is_staff), 400 if error else 200


@bp.route("/login/link/<token>", methods=["GET", "POST"])
def login_link(token: str):
    link = auth.find_link(_db(), token, "login")
    if link is None:
        return render_template("server/message.html", title="Login link",
                               message="This login link is unknown, used or expired."), 404
    with _db().session() as s:
        user = s.get(User, link.user_id)
    if request.method == "POST":
        auth.check_csrf(400)
        if auth.use_link(_db(), token, "login") is None or user is None or user.disabled:
            abort(404)
        auth.login_session(user)
        return redirect(_safe_next(request.form.get("next")))
    return render_template("server/link.html", username=user.username if user else "?")


def _account_page(new_token: str | None = None, message: str | None = None) -> str:
    with _db().session() as s:
        tokens = list(s.scalars(select(ApiToken).where(ApiToken.user_id == g.user.id).order_by(ApiToken.id.desc())))
    return render_template("server/account.html", tokens=tokens, new_token=new_token,
                           message=message or session.pop("message", None))


@bp.get("/account")
@auth.login_required
def account():
    return _account_page()


@bp.post("/account/tokens")
@auth.login_required
def new_token():
    """The new token is in this answer only (no-store): it is never kept anywhere, not even in the cookie."""
    auth.check_csrf(400)
    name = "".join(ch for ch in request.form.get("name", "")[:256] if ch.isprintable())[:64] or "command line"
    return _account_page(new_token=auth.create_api_token(_db(), g.user.username, name))


@bp.post("/account/tokens/<rowid:token_id>/revoke")
@auth.login_required
def revoke_token(token_id: int):
    auth.check_csrf(400)
    auth.revoke_api_token(_db(), g.user.id, token_id)
    return redirect(url_for("accounts.account"))


@bp.post("/account/password")
@auth.login_required
def change_password():
    """A new password ends every other session; the API tokens are revoked too unless the form says to keep
    them (``tokens=keep``). Revoking is the default: a password is changed most often because someone else may
    know it, and a token minted with a stolen session would outlive the change otherwise."""
    auth.check_csrf(400)
    try:
        if auth.password_login(g.user.username, request.form.get("current", "")) is None:
            raise auth.AccountError("The current password is wrong.")
        keep = request.form.get("tokens") == "keep"
        auth.set_password(_db(), g.user.username, request.form.get("password", ""), revoke_tokens=not keep)
    except Throttled as e:
        return _account_page(message=e.message), 429, {"Retry-After": str(e.retry_after)}
    except auth.AccountError as e:
        session["message"] = str(e)
        return redirect(url_for("accounts.account"))
    auth.login_session(auth.find_user(_db(), g.user.username))  # a new session here; every other one ended
    session["message"] = "Password changed; your other sessions are logged out" + \
        (" and your API tokens kept." if keep else " and your API tokens revoked.")
    return redirect(url_for("accounts.account"))


@bp.get("/api/v1/me")
def me():
    user = auth.current_user()
    if user is None:
        raise ApiError(401, "unauthorized", "Not logged in.", login_url=url_for("accounts.login"))
    return {"user": {"username": user.username, "staff": user.is_staff}, "csrf_token": auth.csrf_token()}
