# ftflame — make help lists the targets.
# Knobs: ASAN=1 (C core with AddressSanitizer/UBSan), PYTEST_ARGS="-k foo", V=1.

SHELL      := /bin/bash
VENV       ?= .venv
PY         := $(VENV)/bin/python
FTFLAME    := $(VENV)/bin/ftflame
APT_PKGS   := trace-cmd libtracecmd-dev libtraceevent-dev libtracefs-dev pkg-config gcc make \
              python3-venv zstd shellcheck \
              chromium chromium-driver
SAMPLE     := tests/data/sample/trace.dat
OUT        ?= out
CORE_SRC   := $(wildcard parse/core/*.c parse/core/*.h)
ASAN       ?= 0

# Render checks (speedscope's JSON schema from its npm package, inferno for the
# folded output): pinned, installed by `make setup-render-tools`, cached.
SPEEDSCOPE_VERSION := 1.25.0
INFERNO_VERSION    := 0.12.8
NPM_CACHE_DIR      := .cache/npm
INFERNO_ROOT       ?= $(HOME)/.cache/ftflame/inferno-$(INFERNO_VERSION)
CARGO              ?= $(shell command -v cargo 2>/dev/null || echo $(HOME)/.cargo/bin/cargo)
SPEEDSCOPE_SCHEMA  := $(NPM_CACHE_DIR)/node_modules/speedscope/dist/release/file-format-schema.json

.PHONY: help setup build demo test test-vm bench golden clean setup-render-tools

help:  ## list the targets
	@echo "ftflame make targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  make \1\t/' | expand -t 22
	@echo "knobs: ASAN=1 (sanitized C core)  PYTEST_ARGS='-k name'  OUT=dir (demo output)"

setup: .setup-stamp build  ## install Debian packages, the venv and ftflame (idempotent, quick when done)

.setup-stamp: pyproject.toml Makefile
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "setup: installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade "pip>=23" >/dev/null
	@$(PY) -m pip install -q -e ".[test]"
	@touch $@

setup-render-tools: $(SPEEDSCOPE_SCHEMA) $(INFERNO_ROOT)/bin/inferno-flamegraph  ## install speedscope (npm, for its schema) and inferno (cargo), cached

$(SPEEDSCOPE_SCHEMA):
	@mkdir -p $(NPM_CACHE_DIR)
	npm install --prefix $(NPM_CACHE_DIR) --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
	  speedscope@$(SPEEDSCOPE_VERSION) >/dev/null
	@test -f $@ || { echo "setup-render-tools: $@ not in the speedscope package"; exit 1; }

$(INFERNO_ROOT)/bin/inferno-flamegraph:
	$(CARGO) install --quiet --locked --root $(INFERNO_ROOT) --version $(INFERNO_VERSION) inferno

build: .setup-stamp .build-stamp-$(ASAN)  ## (re)build the C core in place

.build-stamp-$(ASAN): $(CORE_SRC) setup.py
	@rm -f .build-stamp-*
	ASAN=$(ASAN) $(PY) setup.py -q build_ext --inplace >/dev/null
	@touch $@

demo: setup  ## write reports of the bundled sample trace into out/
	@mkdir -p $(OUT)
	$(FTFLAME) report $(SAMPLE) -o $(OUT)/sample.txt
	$(FTFLAME) report $(SAMPLE) -o $(OUT)/sample.json
	$(FTFLAME) report $(SAMPLE) -o $(OUT)/sample.folded
	$(FTFLAME) report $(SAMPLE) -o $(OUT)/sample.html
	@echo; head -n 40 $(OUT)/sample.txt; echo "..."; echo "demo: reports written to $(OUT)/"

test: setup  ## run the test suite (unit, golden, invariants on every fixture, browser)
	FTFLAME_INFERNO_ROOT=$(INFERNO_ROOT) FTFLAME_SPEEDSCOPE_SCHEMA=$(abspath $(SPEEDSCOPE_SCHEMA)) \
	$(if $(filter 1,$(ASAN)),LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" ASAN_OPTIONS=detect_leaks=0,) \
	  $(PY) -m pytest -q $(PYTEST_ARGS)

golden: setup  ## regenerate golden outputs (tests/data/events/expected), then review the diff
	UPDATE_GOLDEN=1 $(PY) -m pytest -q tests/test_golden.py

bench: setup  ## benchmark against trace-cmd report and a bare libtracecmd loop
	$(PY) bench/run.py

clean:  ## remove build products (keeps the venv)
	rm -rf build *.egg-info parse/*.so .build-stamp-* $(OUT)
