"""The site's configuration: defaults, then ``MINISGL_PRACTICE_*`` environment variables, then overrides."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

PREFIX = "MINISGL_PRACTICE_"

DEFAULTS: dict[str, Any] = {
    "SECRET_KEY": None,  # None: a random key kept in the instance folder (``secret_key``), made on first start
    "EXERCISES_DIR": None,  # None: judge's default ($MINISGL_EXERCISES, else the checkout's exercises/)
    "MAX_QUERY_BYTES": 2048,  # a longer query string is refused with 414 (pages and API alike)
    "BROWSER_SITE": None,  # the built browser assets (browser/build.py); None: .cache/browser/site
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
    return config


def instance_secret_key(instance_path: str) -> str:
    """The key kept in ``<instance>/secret_key`` (made once, mode 0600): every worker and restart share it."""
    path = os.path.join(instance_path, "secret_key")
    os.makedirs(instance_path, exist_ok=True)
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(os.urandom(32).hex())
        try:
            os.link(tmp, path)  # atomic: of two processes starting at once, one key wins
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    with open(path, encoding="ascii") as f:
        return f.read().strip()
