# `make test` and `make demo` set up everything they need: a virtual environment per bpy version.
BPY ?= 5.0.1
# bpy 5.1 and later are built for Python 3.13; earlier ones for 3.11 (the machine's python3).
ifneq ($(filter 5.1.% 5.2.% 5.3.%,$(BPY)),)
# (pyenv's shims on PATH refuse to run a version that is not selected, so its real binaries come first)
PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) \
                      $(filter-out %/shims/python3.13,$(shell command -v python3.13)))
else
PYTHON ?= python3
endif
ifeq ($(BPY),5.0.1)
VENV ?= .venv
else
VENV ?= .venv-bpy$(BPY)
endif
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-bpy$(BPY)
PYTEST_ARGS ?=
DEMO_ARGS ?=

.PHONY: test demo bench extension venv clean

venv: $(STAMP)

$(STAMP): requirements-dev.txt
	@test -n "$(PYTHON)" || { echo "bpy $(BPY) needs Python 3.13, which was not found" >&2; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check "bpy==$(BPY)" -r requirements-dev.txt
	@touch $@

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# The demo's figure, plot and baked file go to out/demo (DEMO_ARGS="--quick" for tiny pictures).
demo: $(STAMP)
	$(PY) scripts/demo.py $(DEMO_ARGS)

bench: $(STAMP)
	$(PY) scripts/bench_solver.py

extension: $(STAMP)
	$(PY) scripts/build_extension.py

clean:
	rm -rf build .pytest_cache
