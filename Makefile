# Two commands for a new machine: `make setup`, then `make reproduce`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
SLURM_VENV := .venv-slurm
CORES ?= all
# pytest processes for `make test` (each test module runs whole in one of them).
TEST_WORKERS ?= auto
# Where pip takes torch from: empty, the configured package index; set it to choose a build,
# e.g. https://download.pytorch.org/whl/cpu (CPU only) or .../whl/cu126 (CUDA 12.6).
TORCH_INDEX_URL ?=
# uv installs the pinned requirements (about a minute here with bytecode compiled, where pip took
# 2-3 minutes; the same versions).
# It does not read pip's configuration, so the indexes and wheel folders pip is configured with
# (a local mirror, say) are handed to it; every index counts alike, as for pip.
UV_VERSION := 0.13.9
UV_SOURCES = $(foreach url,$(shell $(PYTHON) -m pip config get global.index-url 2>/dev/null),--index-url $(url)) \
	$(foreach url,$(shell $(PYTHON) -m pip config get global.extra-index-url 2>/dev/null),--extra-index-url $(url)) \
	$(foreach dir,$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null),--find-links $(dir)) \
	--index-strategy unsafe-best-match

.PHONY: setup setup-slurm reproduce report test test-gpu test-paper test-slurm lint docs benchmark clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install torch==2.13.0 $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	$(BIN)/pip install uv==$(UV_VERSION)
	$(BIN)/uv pip install --python $(BIN)/python --compile-bytecode -r requirements.txt $(UV_SOURCES)
	$(BIN)/pip install --no-deps -e .
	# Where PYTHONDONTWRITEBYTECODE is set, every job would otherwise compile the package again.
	$(BIN)/python -m compileall -q src
	$(BIN)/pip check
	$(BIN)/python -c 'from hybrid_ir.neural.colbert_compat import build_cpu_kernels; build_cpu_kernels()'
	touch $@

# The SLURM executor plugin (requirements-slurm.txt) in a venv of its own over .venv, whose
# packages a .pth file adds: Snakemake imports every executor plugin beside it at each start, and
# this one imports pandas (0.6-0.9 s of every `snakemake` call on 2 cores), so .venv goes
# without it. Run `.venv-slurm/bin/snakemake --profile profiles/slurm ...` on a cluster.
setup-slurm: $(SLURM_VENV)/.installed

$(SLURM_VENV)/.installed: $(VENV)/.installed requirements-slurm.txt
	$(PYTHON) -m venv --without-pip $(SLURM_VENV)
	base=$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') && \
	overlay=$$($(SLURM_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') && \
	echo "import site; site.addsitedir('$$base')" > "$$overlay/hybrid-ir-base.pth"
	$(BIN)/uv pip install --python $(SLURM_VENV)/bin/python --no-deps -r requirements-slurm.txt $(UV_SOURCES)
	printf '#!/bin/sh\nexec "$$(dirname "$$0")/python" -m snakemake "$$@"\n' > $(SLURM_VENV)/bin/snakemake
	chmod +x $(SLURM_VENV)/bin/snakemake
	$(SLURM_VENV)/bin/python -c 'import hybrid_ir, snakemake_executor_plugin_slurm'
	touch $@

reproduce: setup
	$(BIN)/snakemake --cores $(CORES) --show-failed-logs

# One HTML file with every table and figure, captions and configuration, for offline reading;
# runs whatever is not yet up to date first.
report: reproduce
	$(BIN)/snakemake --report results/report.html

# The habits a change must keep: the same checks as .pre-commit-config.yaml, then the tests.
lint: setup
	$(BIN)/ruff check src tests workflow/scripts benchmarks
	$(BIN)/ruff format --check src tests workflow/scripts benchmarks
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/mypy
	$(BIN)/snakemake --lint

# setup-slurm: one test dry-runs the paper configuration through profiles/slurm.
test: lint setup-slurm
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=15

# On a machine with CUDA (make setup TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126, or
# a venv with a CUDA torch): every test marked gpu, the GPU mini-run of tests/test_gpu.py among
# them. Without CUDA they fail here instead of skipping as in make test.
test-gpu: setup
	HYBRID_IR_REQUIRE_GPU=1 $(BIN)/python -m pytest -q -m gpu -rs

# Every job of configs/paper.yaml (with paper004-beir.yaml and paper002-multilingual.yaml) and
# configs/ntcir12.yaml, executed on the CPU over stand-in collections and tiny models of each hub
# model's family (tests/test_paper_run.py); prints the jobs, tables and figures.
test-paper: setup
	$(BIN)/python -m pytest -q -s -m paper tests/test_paper_run.py

# The toy workflow on a one-node SLURM cluster started here (as root: it apt-installs slurm-wlm
# and munge when missing) and stopped again whatever the tests did.
test-slurm: setup-slurm
	tests/slurm/start.sh
	$(SLURM_VENV)/bin/python -m pytest -q -m slurm tests/slurm; status=$$?; tests/slurm/stop.sh; exit $$status

benchmark: setup
	$(BIN)/pip install -q -r requirements-bench.txt
	$(BIN)/python benchmarks/noop_rerun.py
	$(BIN)/python benchmarks/job_start.py
	$(BIN)/python benchmarks/evaluation_vs_ranx.py
	$(BIN)/python benchmarks/crossval_vs_pya0.py
	$(BIN)/python benchmarks/sparse_dense.py
	$(BIN)/python benchmarks/math_models.py
	$(BIN)/python benchmarks/cpu_precision.py
	$(BIN)/python benchmarks/training_loops.py
	$(BIN)/python benchmarks/structure.py
	$(BIN)/python benchmarks/askme_scale.py --documents 100000 1000000
	$(BIN)/python benchmarks/scale.py
	$(BIN)/python benchmarks/pretrain_memory.py
	$(BIN)/python benchmarks/paper_scale.py

# The rule graph of docs/architecture.md (needs Graphviz: Debian's graphviz package).
docs: setup
	$(BIN)/snakemake --rulegraph --quiet all > docs/rulegraph.dot
	dot -Tsvg docs/rulegraph.dot -o docs/rulegraph.svg

clean:
	rm -rf results .snakemake
