"""``python -m web [--host H] [--port P]``: the practice site on the embedded default, its address printed.

The embedded default is SQLite in the instance folder and a local grading runner (``web/embedded.py``):
"Judge on the GPU server" works on a laptop, on its GPU or, without one, on the CPU with emulated graphs.

For production, run it under gunicorn: ``gunicorn "web:create_app()"`` (see docs/site.md).
"""

from __future__ import annotations

import argparse
import os
import sys

from . import STATIC


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m web", description=__doc__.splitlines()[0])
    p.add_argument("--host", default=os.environ.get("MINISGL_PRACTICE_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("MINISGL_PRACTICE_PORT", "8000")))
    p.add_argument("--no-runner", action="store_true", help="the site alone, without the local grading runner")
    args = p.parse_args(argv)
    if not (STATIC / "dist" / "exercise.js").is_file():
        print("the editor bundle is missing: run `make site` (npm ci and the esbuild build in web/frontend)",
              file=sys.stderr)
        return 2
    from .embedded import serve

    return serve(args.host, args.port, runner=not args.no_runner)


if __name__ == "__main__":
    sys.exit(main())
