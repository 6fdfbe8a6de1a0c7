"""A small Server-Sent Events client for the tests and the benchmark (requests, streaming)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import requests


@dataclass
class Event:
    name: str
    data: dict[str, Any]
    at: float  # time.monotonic() when it arrived


@dataclass
class Stream:
    events: list[Event] = field(default_factory=list)
    heartbeats: list[float] = field(default_factory=list)


def watch(url: str, token: str, timeout: float = 120.0, stream: Stream | None = None,
          session: requests.Session | None = None, chunk_size: int = 1, read_timeout: float = 30.0) -> Stream:
    """Read the event stream until it ends (done or cancelled) or ``timeout``. A ``chunk_size`` over 1 reads
    what each HTTP chunk brings at once (far less CPU for many streams; the response must be chunked)."""
    out = stream or Stream()
    http = session or requests
    deadline = time.monotonic() + timeout
    with http.get(url, headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}, stream=True,
                  timeout=(5, read_timeout)) as r:
        r.raise_for_status()
        name, data = None, None
        for raw in r.iter_lines(chunk_size=chunk_size, decode_unicode=True):
            if time.monotonic() > deadline:
                break
            line = raw or ""
            if line.startswith(":"):
                out.heartbeats.append(time.monotonic())
            elif line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif line == "" and name is not None:
                out.events.append(Event(name, data or {}, time.monotonic()))
                if name in ("done", "cancelled"):
                    break
                name, data = None, None
    return out
