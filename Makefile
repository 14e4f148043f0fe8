# The README's two commands: `make reproduce` and `make test`. Each creates .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ARGS ?=
SCALE ?= quick
JOBS ?= 2
# Each scale has its own results folder: results/ for quick, results/<scale>/ for the others.
OUT ?= results$(if $(filter-out quick,$(SCALE)),/$(SCALE),)
# TORCH_CPU=1 installs torch from PyTorch's CPU-only wheel index (a small install with no CUDA
# libraries). Leave it empty to let pip resolve torch from the index it is configured with: on
# the public index that is the CUDA build for Linux x86-64, with about 2 GB of NVIDIA wheels.
TORCH_CPU ?=
TORCH_INDEX := $(if $(TORCH_CPU),--index-url https://download.pytorch.org/whl/cpu,)

.PHONY: install reproduce test lint format report clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is installed first, pinned, from the index chosen above; the package install then finds it
# already satisfied and pulls no other build.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH_INDEX) "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[dev]" "torch==2.13.0"
	# TSB-AD's own metric code, for the cross-check tests only (its pinned deps are not needed).
	$(BIN)/python -m pip install --quiet --no-deps "tsb-ad==1.5"
	# MovieLens-100k ships inside the RecBole wheel (SIREN's full-scale data); its own pins clash
	# with ours and the package is never imported, only its data folder read.
	$(BIN)/python -m pip install --quiet --no-deps "recbole==1.2.1"
	touch $(STAMP)

install: $(STAMP)

reproduce: $(STAMP)
	$(BIN)/iclr26 reproduce --scale $(SCALE) --jobs $(JOBS) --out $(OUT) $(ARGS)

report: $(STAMP)
	$(BIN)/iclr26 report --out $(OUT)

test: $(STAMP)
	$(BIN)/ruff check src tests scripts $(wildcard benchmarks)
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist worksteal -q $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts $(wildcard benchmarks)
	$(BIN)/ruff format --check src tests scripts $(wildcard benchmarks)

format: $(STAMP)
	$(BIN)/ruff format src tests
	$(BIN)/ruff check --fix src tests

clean:
	rm -rf $(VENV) results .pytest_cache
