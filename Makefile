# Two commands do all set-up on a fresh machine with only Python and make:
#   make demo   - create .venv if missing, install dperm, run the main job on embedded Adult
#   make test   - same set-up, then ruff (make lint), then the pytest suite less the tests marked
#                 slow (<= 5 min quiet)
#   make lint   - ruff check of src, tests, scripts and benchmarks ([tool.ruff] in pyproject.toml)
#   make test-slow - the tests marked slow (long audits, loopback deployments, wheel builds, big
#                    experiments); CI (.ci/run) runs both
#   make docs   - the documentation site (docs/_build/html), warnings as errors
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DPERM_DATA ?= $(abspath ../shared/data)
export DPERM_DATA

.PHONY: demo lint test test-slow install docs bench bench-pipeline bench-defaults bench-scale clean

$(BIN)/python:
	@echo "dperm: creating the virtual environment $(VENV) (first run only)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	@echo "dperm: installing dperm and its test, multiparty and Dask extras into $(VENV)"
	@echo "       (numpy, scipy, scikit-learn, Flower, Dask, pytest: a few minutes on the first run only)"
	$(BIN)/python -m pip install --progress-bar off -e ".[test,multiparty,dask]"
	touch $@

install: $(VENV)/.installed

demo: install
	MPLBACKEND=Agg $(BIN)/dperm demo

# One OpenBLAS thread: the tests' problems are small, and on a busy 2-core machine OpenBLAS's
# threads made tests/linear_model take 3.3x the CPU (15.8 s vs 4.8 s; wall 108 s vs 52 s).
# Exported, so the tests' subprocesses (Dask workers, Flower apps) compute the same way.
TEST_ENV := MPLBACKEND=Agg OPENBLAS_NUM_THREADS=1

# ruff is in the test extra, so the set-up above installs it on a fresh machine.
lint: install
	$(BIN)/python -m ruff check src tests scripts benchmarks examples

test: lint
	$(TEST_ENV) $(BIN)/python -m pytest -q -m "not slow"

# -v: each slow test's name is printed when it starts (some take minutes).
test-slow: install
	$(TEST_ENV) $(BIN)/python -m pytest -v -m slow

# The documentation site: API reference from the docstrings, the gallery executed.
$(VENV)/.docs-installed: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	touch $@

docs: $(VENV)/.docs-installed
	MPLBACKEND=Agg $(BIN)/python -m sphinx -b html -W --keep-going docs docs/_build/html
	@echo "open docs/_build/html/index.html"

# Benchmarks need diffprivlib, which needs scikit-learn < 1.9: a separate environment.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet -e ".[bench]"
	touch $@

bench: $(BENCH_VENV)/.installed
	MPLBACKEND=Agg $(BENCH_VENV)/bin/python benchmarks/peers_logistic.py --dataset adult
	MPLBACKEND=Agg $(BENCH_VENV)/bin/python benchmarks/peers_logistic.py --dataset kddcup99

# Issue 17's private end-to-end benchmark (hours on two quiet cores: see its JSON's
# runtime_estimate_full_seconds; BENCH_ARGS="--quick" for a smoke run, "--jobs 2" for both cores).
bench-pipeline: $(BENCH_VENV)/.installed
	MPLBACKEND=Agg $(BENCH_VENV)/bin/python benchmarks/private_pipeline.py $(BENCH_ARGS)

# Issue 30's benchmark of the defaults on public tables no rule was fitted on (one process, one
# BLAS thread; resumes benchmarks/results/defaults.json cell by cell). BENCH_ARGS="--quick" for a
# smoke run, "--only diamonds --parts cv" for a part, "--report" to redraw the table and plot.
bench-defaults: $(BENCH_VENV)/.installed
	OPENBLAS_NUM_THREADS=1 MPLBACKEND=Agg $(BENCH_VENV)/bin/python benchmarks/defaults.py $(BENCH_ARGS)

# Scale benchmark: ~10 GiB of Parquet (the KDD Cup 99 design replicated with fresh noise,
# 5x the 2 x 1 GiB of Dask workers), then dperm on Dask vs dask-ml and in-memory dperm vs
# scikit-learn. SCALE_DATA is where the generated files go (default: ../scale-data).
SCALE_DATA ?= $(abspath ../scale-data)/kdd-replica
$(BENCH_VENV)/.scale-installed: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python -m pip install --quiet -e ".[bench,scale-bench]"
	touch $@

bench-scale: $(BENCH_VENV)/.scale-installed
	$(BENCH_VENV)/bin/python benchmarks/scale_data.py --out $(SCALE_DATA) --files 110 --rows-per-file 100000
	cd benchmarks && ../$(BENCH_VENV)/bin/python scale.py --data $(SCALE_DATA)

clean:
	rm -rf $(VENV) $(BENCH_VENV) build src/*.egg-info docs/_build docs/generated docs/auto_examples
