# budgetsvm developer commands. Every target that needs the package installs it first
# into .venv (created if missing), so `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SOURCES := pyproject.toml setup.py $(wildcard budgetsvm/*.pyx budgetsvm/*.pxd)
BSVM_DATA ?=
export BSVM_DATA

.PHONY: demo test bench bench-quick install install-test debug-build clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# build tools in the venv too, so `BSVM_ONLY=_x python setup.py build_ext --inplace` works
	$(BIN)/python -m pip install --quiet "setuptools>=64" "Cython>=3.0.10,<4" "numpy>=2"

# The editable install builds the Cython extensions in place; rebuilt when a source changes.
$(VENV)/.install-stamp: $(BIN)/python $(SOURCES)
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.test-stamp: $(VENV)/.install-stamp
	$(BIN)/python -m pip install --quiet -e '.[test,dist,plot]'
	touch $@

install: $(VENV)/.install-stamp
install-test: $(VENV)/.test-stamp

# Train a linear SVM on a9a (shipped in data/) and predict its test split.
demo: install
	$(BIN)/bsvm-train -s dcd -c 1 data/a9a.xz a9a.model
	$(BIN)/bsvm-predict data/a9a.t.xz a9a.model a9a.predictions

test: install-test
	$(BIN)/python -m pytest -q

# Benchmarks read the data sets from BSVM_DATA (default: ../shared/data beside the clone) and
# regenerate docs/BENCHMARKS.md and its figures in docs/figures/ (matplotlib: the plot extra);
# bench-quick is the subset that fits in about 10 minutes on 2 cores.
BENCH_DATA = $${BSVM_DATA:-$(abspath ..)/shared/data}

bench: install-test
	BSVM_DATA=$(BENCH_DATA) $(BIN)/python scripts/run_benchmarks.py

bench-quick: install-test
	BSVM_DATA=$(BENCH_DATA) $(BIN)/python scripts/run_benchmarks.py --quick

debug-build: $(BIN)/python
	BSVM_DEBUG=1 $(BIN)/python -m pip install --quiet -e '.[test]'
	rm -f $(VENV)/.install-stamp

clean:
	rm -rf build budgetsvm/*.so budgetsvm/_*.c *.egg-info
