# The job image: what runs one judging inside the runner's container (docker executor).
#   python docker/build.py job               CUDA PyTorch + FlashInfer from PyPI, for a GPU host
#   python docker/build.py job --cpu         CPU PyTorch, offline (wheels downloaded on the host): CI
# Context: the repository root.
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS deps
ARG PIP_ARGS=""
ARG EXTRA="flashinfer-python==0.7.4"
COPY docker/wheels/ /wheels/
COPY docker/requirements-job.txt /tmp/requirements-job.txt
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check ${PIP_ARGS} -r /tmp/requirements-job.txt ${EXTRA}

# the tiny test models are written from a fixed seed (byte-identical everywhere), not downloaded
FROM deps AS models
ARG PIP_ARGS=""
COPY docker/requirements-models.txt /tmp/requirements-models.txt
RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check ${PIP_ARGS} -r /tmp/requirements-models.txt
COPY minisgl /opt/minisgl/minisgl
RUN cd /opt/minisgl && MINISGL_TEST_MODELS=/opt/models /opt/venv/bin/python -c \
    "from minisgl.testing import tiny_model; print(tiny_model('qwen3'))"

FROM ${BASE}
COPY --from=deps /opt/venv /opt/venv
COPY --from=models /opt/models /opt/minisgl/models/test
COPY minisgl /opt/minisgl/minisgl
COPY judge /opt/minisgl/judge
COPY exercises /opt/minisgl/exercises
COPY runner /opt/minisgl/runner
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONPATH=/opt/minisgl \
    MINISGL_TEST_MODELS=/opt/minisgl/models/test \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# the runner mounts tmpfs folders at /scratch and /tmp (Docker copies the mode of the folder underneath)
RUN mkdir -p /scratch && chmod 1777 /scratch /tmp
# a user that owns nothing in the image; the runner also passes --user and a read-only root
USER 10001:10001
WORKDIR /scratch
CMD ["python", "-m", "runner.job", "/in", "/out"]
