"""Account pages: log in and out, accept an invitation, one-time login links, API tokens; ``GET /api/v1/me``.

Staff create accounts (``flask --app web users create``) or invitation links (``users invite``); there is
no open sign-up. Every form carries the session's CSRF token.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, abort, g, redirect, render_template, request, session, url_for
from sqlalchemy import select

from . import auth
from .errors import ApiError
from .grading import get_grading
from .models import ApiToken, User

bp = Blueprint("accounts", __name__, template_folder="templates")


def _db():
    return get_grading().db


def _safe_next(target: str | None) -> str:
    """Only a path on this site (no scheme, no host, no '//' or backslash tricks)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else "/"


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
    error = None
    if request.method == "POST":
        auth.check_csrf(400)
        user = auth.verify_login(_db(), request.form.get("username", ""), request.form.get("password", ""))
        if user is not None:
            auth.login_session(user)
            return redirect(_safe_next(request.form.get("next")))
        error = "Wrong username or password."
    auth.current_user()
    return render_template("server/login.html", error=error, next=_safe_next(request.args.get("next"))), \
        401 if error else 200


@bp.post("/logout")
def logout():
    auth.check_csrf(400)
    session.clear()
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
            auth.check_username(request.form.get("username", ""))
            auth.check_password(password)
            if password != request.form.get("password2", ""):
                raise auth.AccountError("The two passwords differ.")
            if auth.use_link(_db(), token, "invite") is None:
                raise auth.AccountError("This invitation was just used.")
            user = auth.create_user(_db(), request.form.get("username", ""), password, staff=link.is_staff)
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


@bp.get("/account")
@auth.login_required
def account():
    with _db().session() as s:
        tokens = list(s.scalars(select(ApiToken).where(ApiToken.user_id == g.user.id).order_by(ApiToken.id.desc())))
    return render_template("server/account.html", tokens=tokens, new_token=session.pop("new_token", None),
                           message=session.pop("message", None))


@bp.post("/account/tokens")
@auth.login_required
def new_token():
    auth.check_csrf(400)
    name = request.form.get("name", "")[:64] or "command line"
    session["new_token"] = auth.create_api_token(_db(), g.user.username, name)  # shown once, then dropped
    return redirect(url_for("accounts.account"))


@bp.post("/account/tokens/<rowid:token_id>/revoke")
@auth.login_required
def revoke_token(token_id: int):
    auth.check_csrf(400)
    auth.revoke_api_token(_db(), g.user.id, token_id)
    return redirect(url_for("accounts.account"))


@bp.post("/account/password")
@auth.login_required
def change_password():
    auth.check_csrf(400)
    if auth.verify_login(_db(), g.user.username, request.form.get("current", "")) is None:
        session["message"] = "The current password is wrong."
        return redirect(url_for("accounts.account"))
    try:
        auth.set_password(_db(), g.user.username, request.form.get("password", ""))
    except auth.AccountError as e:
        session["message"] = str(e)
        return redirect(url_for("accounts.account"))
    user = auth.find_user(_db(), g.user.username)
    auth.login_session(user)  # this session survives; every other one is logged out
    session["message"] = "Password changed; other sessions are logged out."
    return redirect(url_for("accounts.account"))


@bp.get("/api/v1/me")
def me():
    user = auth.current_user()
    if user is None:
        raise ApiError(401, "unauthorized", "Not logged in.", login_url=url_for("accounts.login"))
    return {"user": {"username": user.username, "staff": user.is_staff}, "csrf_token": auth.csrf_token()}
