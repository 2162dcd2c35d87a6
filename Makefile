# Two commands for a new machine: `make setup`, then `make reproduce`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all

.PHONY: setup reproduce test lint benchmark clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -r requirements.txt
	$(BIN)/pip install --no-deps -e .
	$(BIN)/pip check
	touch $@

reproduce: setup
	$(BIN)/snakemake --cores $(CORES) --show-failed-logs

test: setup
	$(BIN)/ruff check src tests workflow/scripts benchmarks
	$(BIN)/snakemake --lint
	$(BIN)/python -m pytest -q

benchmark: setup
	$(BIN)/python benchmarks/noop_rerun.py
	$(BIN)/python benchmarks/crossval_vs_pya0.py
	$(BIN)/python benchmarks/sparse_dense.py
	$(BIN)/python benchmarks/math_models.py

clean:
	rm -rf results .snakemake
