#!/bin/sh
# Apply the database migrations (idempotent), then start the site.
set -e
flask --app web db upgrade
exec "$@"
