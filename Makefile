# `make test` and `make demo` set up everything they need: a virtual environment per bpy version.
BPY ?= 5.0.1
PYTHON ?= python3
ifeq ($(BPY),5.0.1)
VENV ?= .venv
else
VENV ?= .venv-bpy$(BPY)
endif
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-bpy$(BPY)
PYTEST_ARGS ?=

.PHONY: test demo bench extension venv clean

venv: $(STAMP)

$(STAMP): requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check "bpy==$(BPY)" -r requirements-dev.txt
	@touch $@

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) scripts/bench_solver.py

extension: $(STAMP)
	$(PY) scripts/build_extension.py

clean:
	rm -rf build .pytest_cache
