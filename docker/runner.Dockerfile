# The runner: pulls jobs from the site and starts one job container per job on the host's Docker
# (the socket is mounted). It needs no PyTorch: the judging happens in the job image. It holds the engine's
# source to build the learner's copy of it (the targets' bodies removed) for each trusted judging.
# Context: the repository root.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}
ARG PIP_ARGS=""
COPY docker/wheels/ /wheels/
COPY docker/requirements-runner.txt /tmp/requirements-runner.txt
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check ${PIP_ARGS} -r /tmp/requirements-runner.txt \
 && rm -rf /wheels
COPY minisgl /opt/practice/minisgl
COPY judge /opt/practice/judge
COPY exercises /opt/practice/exercises
COPY runner /opt/practice/runner
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin PYTHONPATH=/opt/practice PYTHONUNBUFFERED=1
WORKDIR /opt/practice
# it runs as root: it talks to the Docker socket and gives each job folder to the job's user
STOPSIGNAL SIGTERM
ENTRYPOINT ["python", "-m", "runner"]
