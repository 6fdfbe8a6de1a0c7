"""``python -m web [--host H] [--port P]``: the practice site on the embedded default, its address printed.

For production, run it under gunicorn: ``gunicorn "web:create_app()"`` (see docs/site.md).
"""

from __future__ import annotations

import argparse
import os
import sys

from werkzeug.serving import run_simple

from . import STATIC, create_app


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m web", description=__doc__.splitlines()[0])
    p.add_argument("--host", default=os.environ.get("MINISGL_PRACTICE_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("MINISGL_PRACTICE_PORT", "8000")))
    args = p.parse_args(argv)
    if not (STATIC / "dist" / "exercise.js").is_file():
        print("the editor bundle is missing: run `make site` (npm ci and the esbuild build in web/frontend)",
              file=sys.stderr)
        return 2
    app = create_app()
    print(f"minisgl practice: http://{args.host}:{args.port}/  (Ctrl+C stops it)", flush=True)
    run_simple(args.host, args.port, app, threaded=True, use_reloader=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
