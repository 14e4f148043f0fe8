# The README's two commands: `make reproduce` and `make test`. Each creates .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ARGS ?=
SCALE ?= quick
JOBS ?= 2

.PHONY: install reproduce test lint format report clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned first so that the CPU wheel is taken and no CUDA build is ever pulled in.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[dev]" "torch==2.13.0"
	# TSB-AD's own metric code, for the cross-check tests only (its pinned deps are not needed).
	$(BIN)/python -m pip install --quiet --no-deps "tsb-ad==1.5"
	touch $(STAMP)

install: $(STAMP)

reproduce: $(STAMP)
	$(BIN)/iclr26 reproduce --scale $(SCALE) --jobs $(JOBS) $(ARGS)

report: $(STAMP)
	$(BIN)/iclr26 report

test: $(STAMP)
	$(BIN)/ruff check src tests
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 -q $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

format: $(STAMP)
	$(BIN)/ruff format src tests
	$(BIN)/ruff check --fix src tests

clean:
	rm -rf $(VENV) results .pytest_cache
