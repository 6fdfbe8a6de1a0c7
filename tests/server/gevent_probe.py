"""Run as ``python gevent_probe.py DATABASE_URL``: under gevent's monkey-patching (what gunicorn's gevent worker
does), the queue's change hub (LISTEN on PostgreSQL) and a slow query must leave the other greenlets running.
Prints ``notified_s`` (a pg_notify reaching a waiter) and ``max_gap_s`` (the longest a 50 ms ticker waited)."""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from sqlalchemy import text  # noqa: E402

from web.db import open_database  # noqa: E402
from web.notify import CHANNEL, Hub  # noqa: E402


def main(url: str) -> None:
    db = open_database(url)
    hub = Hub(db)
    seen = hub.wait(hub.version, 2.0)  # starts the hub (its first poke: listening)
    gaps: list[float] = []

    def ticker() -> None:
        last = time.monotonic()
        for _ in range(40):
            time.sleep(0.05)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    tick = threading.Thread(target=ticker)
    tick.start()
    with db.engine.connect() as c:
        c.execute(text("SELECT pg_notify(:c, '')"), {"c": CHANNEL})
        c.commit()
    t0 = time.monotonic()
    after = hub.wait(seen, 5.0)
    notified = time.monotonic() - t0 if after != seen else None
    with db.engine.connect() as c:  # a second of query in this greenlet: the ticker must go on meanwhile
        c.execute(text("SELECT pg_sleep(1)"))
    tick.join()
    print(json.dumps({"notified_s": notified, "max_gap_s": max(gaps), "ticks": len(gaps)}))
    hub.stop()
    db.dispose()


if __name__ == "__main__":
    main(sys.argv[1])
