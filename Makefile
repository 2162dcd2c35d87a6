# Two commands for a new machine: `make setup`, then `make reproduce`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
SLURM_VENV := .venv-slurm
CORES ?= all
# pytest processes for `make test` (each test module runs whole in one of them).
TEST_WORKERS ?= auto
# torch is installed first and alone, outside requirements.lock: which build (CPU, a CUDA
# version) is the machine's choice. TORCH_INDEX_URL is where pip takes it from: empty, the
# configured package index; e.g. https://download.pytorch.org/whl/cpu (CPU only) or .../whl/cu126.
TORCH_VERSION := 2.13.0
TORCH_INDEX_URL ?=
# uv installs requirements.lock (in seconds from its cache, where pip took 2-3 minutes for the
# same versions) and makes it (make lock).
# It does not read pip's configuration, so the indexes and wheel folders pip is configured with
# (a local mirror, say) are handed to it; every index counts alike, as for pip.
UV_VERSION := 0.13.9
UV_SOURCES = $(foreach url,$(shell $(PYTHON) -m pip config get global.index-url 2>/dev/null),--index-url $(url)) \
	$(foreach url,$(shell $(PYTHON) -m pip config get global.extra-index-url 2>/dev/null),--extra-index-url $(url)) \
	$(foreach dir,$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null),--find-links $(dir)) \
	--index-strategy unsafe-best-match

.PHONY: setup setup-slurm lock reproduce report test test-gpu test-paper test-slurm lint docs rulegraph benchmark \
	clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install --no-compile torch==$(TORCH_VERSION) \
		$(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	$(BIN)/pip install uv==$(UV_VERSION)
	# --no-deps: the lock lists every dependency but torch, which is in place already.
	$(BIN)/uv pip install --python $(BIN)/python --require-hashes --no-deps -r requirements.lock \
		$(UV_SOURCES)
	$(BIN)/uv pip install --python $(BIN)/python --no-deps -e .
	$(BIN)/pip check
	# Bytecode, as PYTHONDONTWRITEBYTECODE may be set and every job would compile its imports
	# again: every package (torch's too, installed without it) but their own tests, never
	# imported and a fifth of the files. A file Python 3.11 cannot compile (torch's
	# py312_intrinsics.py) is named and left, as pip and uv leave it.
	-$(BIN)/python -m compileall -q -j 0 -x 'site-packages/(.*/)?tests?/' src \
		$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
	$(BIN)/python -c 'from hybrid_ir.neural.colbert_compat import build_cpu_kernels; build_cpu_kernels()'
	touch $@

# requirements.lock: every package requirements.txt needs but torch, at one version, with the
# sha256 of each of its files (Python 3.11, Linux x86-64); requirements-slurm.lock, the same for
# what requirements-slurm.txt adds to it; and envs/hybrid-ir.yaml generated from the first. Run
# it after editing requirements.txt (tests/test_lock.py fails until then). torch's CPU build
# decides which of torch's dependencies are locked (CUDA builds bring CUDA libraries of their
# own): where pip's configuration does not find that build, run
# make lock TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu.
LOCK_OPTIONS = --no-emit-package torch --generate-hashes --python-version 3.11 \
	--python-platform x86_64-manylinux_2_28 --custom-compile-command "make lock" --quiet \
	$(UV_SOURCES) $(if $(TORCH_INDEX_URL),--extra-index-url $(TORCH_INDEX_URL))

lock:
	constraint=$$(mktemp) && full=$$(mktemp) && \
	echo "torch==$(TORCH_VERSION)+cpu" > "$$constraint" && \
	$(BIN)/uv pip compile requirements.txt --constraint "$$constraint" $(LOCK_OPTIONS) \
		--output-file requirements.lock && \
	$(BIN)/uv pip compile requirements-slurm.txt --constraint requirements.lock \
		--constraint "$$constraint" $(LOCK_OPTIONS) --output-file "$$full" && \
	$(BIN)/python -c 'import sys; from hybrid_ir.jobs.environment import write_locks; \
		write_locks("$(TORCH_VERSION)", sys.argv[1])' "$$full"; \
	status=$$?; rm -f "$$constraint" "$$full"; exit $$status

# The SLURM executor plugin (requirements-slurm.txt, locked in requirements-slurm.lock) in a
# venv of its own over .venv, whose packages a .pth file adds: Snakemake imports every executor plugin beside it at each start, and
# this one imports pandas (0.6-0.9 s of every `snakemake` call on 2 cores), so .venv goes
# without it. Run `.venv-slurm/bin/snakemake --profile profiles/slurm ...` on a cluster.
setup-slurm: $(SLURM_VENV)/.installed

$(SLURM_VENV)/.installed: $(VENV)/.installed requirements-slurm.lock
	$(PYTHON) -m venv --without-pip $(SLURM_VENV)
	base=$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') && \
	overlay=$$($(SLURM_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') && \
	echo "import site; site.addsitedir('$$base')" > "$$overlay/hybrid-ir-base.pth"
	$(BIN)/uv pip install --python $(SLURM_VENV)/bin/python --require-hashes --no-deps \
		-r requirements-slurm.lock $(UV_SOURCES)
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

# The documentation site (mkdocs.yml) in site/: MkDocs and Material for MkDocs from
# requirements-docs.txt into .venv, the reference pages and the changelog page generated from
# the code and CHANGELOG.md while building (docs/hooks/reference.py), every warning (a missing
# page, a broken link or anchor) an error. The build itself fetches nothing from the network.
docs: setup
	$(BIN)/pip install -q -r requirements-docs.txt
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The rule graph of docs/architecture.md (needs Graphviz: Debian's graphviz package).
rulegraph: setup
	$(BIN)/snakemake --rulegraph --quiet all > docs/rulegraph.dot
	dot -Tsvg docs/rulegraph.dot -o docs/rulegraph.svg

clean:
	rm -rf results .snakemake
