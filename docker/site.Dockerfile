# The site: Flask on gunicorn's gevent workers (an open Server-Sent Events stream is a greenlet, not a thread:
# a worker holds up to --worker-connections of them and still answers everything else; docs/deploy.md).
# Context: the repository root.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}
ARG PIP_ARGS=""
COPY docker/wheels/ /wheels/
COPY docker/requirements-site.txt /tmp/requirements-site.txt
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check ${PIP_ARGS} -r /tmp/requirements-site.txt \
 && rm -rf /wheels
COPY web /opt/practice/web
COPY browser/js /opt/practice/browser/js
COPY judge /opt/practice/judge
COPY exercises /opt/practice/exercises
# the engine's files, not its dependencies (no torch here): the reference solutions are read from them
# (judge/solution.py), for the solution endpoint and the similarity reports
COPY minisgl /opt/practice/minisgl
COPY docker/site-entrypoint.sh /usr/local/bin/site-entrypoint
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin PYTHONPATH=/opt/practice PYTHONUNBUFFERED=1
WORKDIR /opt/practice
RUN /usr/sbin/useradd --system --uid 10002 --user-group --home-dir /var/lib/practice --create-home practice
USER practice
EXPOSE 8000
ENTRYPOINT ["site-entrypoint"]
CMD ["gunicorn", "--bind", "0.0.0.0:8000", "--workers", "4", "--worker-class", "gevent", "--worker-connections", "1000", \
     "--timeout", "120", "--graceful-timeout", "30", "--keep-alive", "30", "--access-logfile", "-", \
     "web:create_app()"]
