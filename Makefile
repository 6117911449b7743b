# Two commands do all set-up on a fresh machine with only Python and make:
#   make demo   - create .venv if missing, install dperm, run the main job on embedded Adult
#   make test   - same set-up, then the whole pytest suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DPERM_DATA ?= $(abspath ../shared/data)
export DPERM_DATA

.PHONY: demo test install bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[test,multiparty,dask]"
	touch $@

install: $(VENV)/.installed

demo: install
	MPLBACKEND=Agg $(BIN)/dperm demo

test: install
	MPLBACKEND=Agg $(BIN)/python -m pytest -q

# Benchmarks need diffprivlib, which needs scikit-learn < 1.9: a separate environment.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet -e ".[bench]"
	touch $@

bench: $(BENCH_VENV)/.installed
	MPLBACKEND=Agg $(BENCH_VENV)/bin/python benchmarks/peers_logistic.py --dataset adult
	MPLBACKEND=Agg $(BENCH_VENV)/bin/python benchmarks/peers_logistic.py --dataset kddcup99

clean:
	rm -rf $(VENV) $(BENCH_VENV) build src/*.egg-info
