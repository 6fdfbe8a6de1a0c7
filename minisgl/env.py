"""Process-wide switches, read from the environment once and changeable at run time (`ENV.X.value`)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass
class EnvFlag:
    name: str
    default: bool

    def __post_init__(self) -> None:
        raw = os.environ.get(f"MINISGL_{self.name}")
        self.value: bool = self.default if raw is None else raw.lower() in ("1", "true", "yes", "on")

    def __bool__(self) -> bool:
        return self.value


class _Env:
    def __init__(self) -> None:
        self.DISABLE_OVERLAP_SCHEDULING = EnvFlag("DISABLE_OVERLAP_SCHEDULING", False)


ENV = _Env()
