# budgetsvm developer commands. Every target that needs the package installs it first
# into .venv (created if missing), so `make demo` and `make test` work on a fresh clone.
#
# Three stamps in .venv, so that nothing is rebuilt or reinstalled when nothing changed:
#   .install-stamp  editable install (dependencies, commands), redone when pyproject.toml
#                   changes. It compiles nothing (BSVM_ONLY=none): pip would recompile every
#                   extension in a fresh build directory each time.
#   .build-stamp    the Cython extensions, compiled in place by setup.py build_ext: only the
#                   modules whose .pyx/.pxd changed are recompiled (build/ and the generated .c
#                   files persist between builds); then the package's bytecode (compileall).
#   .test-stamp     the test, dist and plot extras (their requirements only: the package itself
#                   is not reinstalled).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
EXTENSION_SOURCES := setup.py $(wildcard budgetsvm/*.pyx budgetsvm/*.pxd)
BUILD_TOOLS := "setuptools>=70.1" "Cython>=3.0.10,<4" "numpy>=2"
DEMO_DIR := build/demo
BSVM_DATA ?=
export BSVM_DATA

.PHONY: demo test bench bench-quick install install-test debug-build clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The build tools live in the venv (no isolated build environment: pip's would recompile every
# module each time), so `BSVM_ONLY=_x python setup.py build_ext --inplace` works too.
$(VENV)/.install-stamp: $(BIN)/python pyproject.toml
	@echo "Installing budgetsvm into $(VENV) (editable: dependencies and commands)"
	$(BIN)/python -m pip install --quiet $(BUILD_TOOLS)
	BSVM_ONLY=none $(BIN)/python -m pip install --quiet --no-build-isolation -e .
	touch $@

$(VENV)/.build-stamp: $(VENV)/.install-stamp $(EXTENSION_SOURCES)
	@echo "Compiling the Cython extensions whose sources changed (a first build: 1-2 minutes)"
	$(BIN)/python setup.py --quiet build_ext --inplace $(if $(wildcard $(VENV)/.debug-build),--force)
	rm -f $(VENV)/.debug-build
	@# the modules' bytecode too: an editable install writes none, and where
	@# PYTHONDONTWRITEBYTECODE is set (containers, CI) each command would compile them again
	@# (about 25 ms of bsvm-train's 0.2 s start-up); later edits are compiled in memory as usual
	$(BIN)/python -m compileall -q budgetsvm
	touch $@

$(VENV)/.test-stamp: $(BIN)/python pyproject.toml | $(VENV)/.install-stamp
	@echo "Installing the test, dist and plot extras into $(VENV)"
	$(BIN)/python -c 'import tomllib; extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]; print("\n".join(r for name in ("test", "dist", "plot") for r in extras[name]))' > $(VENV)/extras.txt
	$(BIN)/python -m pip install --quiet -r $(VENV)/extras.txt
	touch $@

install: $(VENV)/.build-stamp
install-test: $(VENV)/.build-stamp $(VENV)/.test-stamp

# The main job on the shipped data: the default budgeted kernel SVM on a9a (C = 32, γ = 2^-7),
# its accuracy on a9a.t and its time, then the linear SVM's accuracy on the same split for
# comparison (scripts/demo.py prints every command it runs); outputs in build/demo.
demo: install
	$(BIN)/python scripts/demo.py --bin $(BIN) --out $(DEMO_DIR)

test: install-test
	$(BIN)/python -m pytest -q

# Benchmarks read the data sets from BSVM_DATA (default: ../shared/data beside the clone) and
# regenerate docs/BENCHMARKS.md and its figures in docs/figures/ (matplotlib: the plot extra);
# bench-quick is the subset that fits in about 25 minutes on 2 cores.
BENCH_DATA = $${BSVM_DATA:-$(abspath ..)/shared/data}

bench: install-test
	BSVM_DATA=$(BENCH_DATA) $(BIN)/python scripts/run_benchmarks.py

bench-quick: install-test
	BSVM_DATA=$(BENCH_DATA) $(BIN)/python scripts/run_benchmarks.py --quick

# Bounds and initialisation checks on, -O0 -g; the next build compiles optimised modules again.
debug-build: $(VENV)/.install-stamp
	BSVM_DEBUG=1 $(BIN)/python setup.py --quiet build_ext --inplace --force
	touch $(VENV)/.debug-build
	rm -f $(VENV)/.build-stamp

clean:
	rm -rf build budgetsvm/*.so budgetsvm/_*.c *.egg-info $(VENV)/.build-stamp
