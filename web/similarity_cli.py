"""``flask --app web similarity run``: compare the new accepted submissions now (web/similarity.py), what the
site's background thread does every ``SIMILARITY_SECONDS``."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import AppGroup

from .grading import get_grading

similarity_cli = AppGroup("similarity", help="Similarity reports between accepted submissions.")


@similarity_cli.command("run")
@click.option("--limit", default=1000, show_default=True, help="At most this many new submissions.")
def similarity_run(limit: int):
    """Compare the new accepted submissions now (the site does it every SIMILARITY_SECONDS by itself)."""
    from .similarity import counts, process_pending

    grading = get_grading()
    done = process_pending(grading.db, current_app.extensions["minisgl.catalog"].get(), limit)
    marked, waiting = counts(grading.db)
    click.echo(f"compared {done} new accepted submissions; {marked} compared in all, {waiting} waiting")
