"""The learner's workspace (where ``start`` puts a starter and ``test``/``submit`` read it) and how the command
line shows a path: relative to the current folder when it is below it."""

from __future__ import annotations

import os
from pathlib import Path

from .exercise import REPO_ROOT


def workspace_dir() -> Path:
    env = os.environ.get("MINISGL_WORKSPACE")
    return Path(env) if env else REPO_ROOT / "practice" / "workspace"


def shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
