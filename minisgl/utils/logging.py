"""Logging: one logger per module, quiet by default (MINISGL_LOG_LEVEL=INFO to see more)."""

from __future__ import annotations

import logging
import os


class Logger(logging.LoggerAdapter):
    def info_rank0(self, msg: str) -> None:  # one process here; the name follows upstream
        self.info(msg)


def init_logger(name: str) -> Logger:
    logger = logging.getLogger(name)
    if not logging.getLogger("minisgl").handlers:
        root = logging.getLogger("minisgl")
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[%(asctime)s %(name)s] %(levelname)s %(message)s", "%H:%M:%S"))
        root.addHandler(handler)
        root.setLevel(os.environ.get("MINISGL_LOG_LEVEL", "WARNING").upper())
    return Logger(logger, {})
