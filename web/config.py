"""The site's configuration: defaults, then ``MINISGL_PRACTICE_*`` environment variables, then overrides."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

PREFIX = "MINISGL_PRACTICE_"

DEFAULTS: dict[str, Any] = {
    "SECRET_KEY": None,  # None: a random key per process (sessions do not survive a restart)
    "EXERCISES_DIR": None,  # None: judge's default ($MINISGL_EXERCISES, else the checkout's exercises/)
    "MAX_QUERY_BYTES": 2048,  # a longer query string is refused with 414 (pages and API alike)
    "BROWSER_SITE": None,  # the built browser assets (tools/build_browser.py); None: .cache/browser/site
    "BROWSER_EXERCISES": None,  # the exercises the minimal judge page lists; None: judge's default
}


def _parse(raw: str, default: Any) -> Any:
    """An environment value, typed like its default (JSON for numbers, booleans and lists)."""
    if isinstance(default, str) or default is None:
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        raise ValueError(f"{PREFIX}: cannot parse {raw!r} (expected a value like {default!r})") from None


def load_config(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> dict:
    env = os.environ if environ is None else environ
    config = dict(DEFAULTS)
    for key, raw in env.items():
        if key.startswith(PREFIX):
            name = key[len(PREFIX):]
            config[name] = _parse(raw, DEFAULTS.get(name))
    config.update(overrides or {})
    if not config.get("SECRET_KEY"):
        config["SECRET_KEY"] = os.urandom(32).hex()
    return config
