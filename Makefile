# ftflame — make help lists the targets.
# Knobs: ASAN=1 (C extensions with AddressSanitizer/UBSan), PYTEST_ARGS="-k foo", V=1.

SHELL      := /bin/bash
VENV       ?= .venv
PY         := $(VENV)/bin/python
FTFLAME    := $(VENV)/bin/ftflame
APT_PKGS   := trace-cmd libtracecmd-dev libtraceevent-dev libtracefs-dev pkg-config gcc make \
              python3-venv python3-dev zstd libzstd-dev zlib1g-dev shellcheck \
              chromium chromium-driver
SAMPLE     := tests/data/sample/trace.dat
OUT        ?= out
# The C extensions' folders (setup.py): the reader and call builder
# (parse._core), the JSON row formatter (report._rowfmt), the model's
# percentiles and tree order (ftflame._model).
NATIVE_DIRS := parse/core report/native ftflame/native
# where `make build` puts them: each in the package of its folder's parent
NATIVE_SO  := $(addsuffix /*.so,$(patsubst %/,%,$(dir $(NATIVE_DIRS))))
NATIVE_SRC := $(foreach d,$(NATIVE_DIRS),$(wildcard $(d)/*.c $(d)/*.h))
ASAN       ?= 0
FUZZ_SECONDS ?= 60
FUZZ_DIR   := build/fuzz
FUZZ_PKGS  := clang libclang-rt-dev
FUZZ_SRC   := parse/core/fuzz_text.c parse/core/reader_text.c parse/core/builder.c parse/core/root_calls.c parse/core/funcs.c parse/core/u64map.c
FUZZ_DAT_SRC := parse/core/fuzz_dat.c $(wildcard parse/core/dat_*.c) parse/core/record_decode.c parse/core/builder.c parse/core/root_calls.c parse/core/funcs.c parse/core/u64map.c
TEXT_FIXTURES := $(wildcard tests/data/fixtures/*/*/*.txt.gz)

# Render checks (speedscope's JSON schema from its npm package, inferno for the
# folded output): pinned, installed by `make setup-render-tools`, cached.
SPEEDSCOPE_VERSION := 1.25.0
INFERNO_VERSION    := 0.12.8
NPM_CACHE_DIR      := .cache/npm
INFERNO_ROOT       ?= $(HOME)/.cache/ftflame/inferno-$(INFERNO_VERSION)
CARGO              ?= $(shell command -v cargo 2>/dev/null || echo $(HOME)/.cargo/bin/cargo)
SPEEDSCOPE_SCHEMA  := $(NPM_CACHE_DIR)/node_modules/speedscope/dist/release/file-format-schema.json
# The page scripts' lint: ESLint from npm, pinned, installed by make lint (not by
# make setup: the demo and the tests need no node; npm comes from Debian's
# package when the machine has none and Debian's nodejs is one ESLint runs on).
ESLINT_VERSION     := 10.15.0
ESLINT_JS_VERSION  := 10.0.1
ESLINT_GLOBALS_VERSION := 17.14.0
ESLINT_DIR         := .cache/eslint
ESLINT             := $(ESLINT_DIR)/node_modules/.bin/eslint
# the pages whose inline <script> includes templates/*.js, in order
JS_PAGES           := templates/report.html templates/diff.html templates/flamegraph.svg

.PHONY: help setup build demo test test-damage lint test-vm bench golden model-error mutate clean setup-render-tools setup-fuzz fuzz setup-vm fixtures fixture-long fixture-long-lost fixture-throttled bench-long bench-phases bench-revs bench-timeline bench-counts

# $(call apt_install,TARGET,PACKAGES[,APT-GET OPTIONS]): install the Debian
# packages not installed yet, saying which (one shell command line).
apt_install = missing=""; for p in $(2); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "$(1): installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(3) $$missing >/dev/null; \
	fi

help:  ## list the targets
	@echo "ftflame make targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /\1\t/' | \
	  awk -F'\t' '{ pre = sprintf("  make %-19s ", $$1); ind = sprintf("%27s", ""); line = pre; \
	    n = split($$2, w, " "); for (i = 1; i <= n; i++) { \
	      if (length(line) + length(w[i]) > 79 && line != pre && line != ind) { sub(/ +$$/, "", line); print line; line = ind } \
	      line = line w[i] " " } sub(/ +$$/, "", line); print line }'
	@echo "knobs: ASAN=1 (sanitized C core)  PYTEST_ARGS='-k name'  OUT=dir (demo output)"

setup: .setup-stamp build  ## install Debian packages, the venv and ftflame (idempotent, quick when done)

.setup-stamp: pyproject.toml Makefile
	@$(call apt_install,setup,$(APT_PKGS))
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade "pip>=23" "setuptools>=77" >/dev/null
	@# the editable install's note ("careful with folders named like the
	@# package") is information only: not printed on every setup
	@PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install -q -e ".[test]"
	@touch $@

setup-render-tools: $(SPEEDSCOPE_SCHEMA) $(INFERNO_ROOT)/bin/inferno-flamegraph  ## install speedscope (npm, for its schema) and inferno (cargo), cached

$(SPEEDSCOPE_SCHEMA):
	@mkdir -p $(NPM_CACHE_DIR)
	npm install --prefix $(NPM_CACHE_DIR) --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
	  speedscope@$(SPEEDSCOPE_VERSION) >/dev/null
	@test -f $@ || { echo "setup-render-tools: $@ not in the speedscope package"; exit 1; }

# ESLint's own engines field: node ^20.19, ^22.13 or >= 24. $(call node_ok,VERSION)
# is true for such a version (v20.20.2 or 20.20.2-1nodesource1).
node_ok = (v=$(1); v=$${v\#v}; IFS=.- read -r ma mi _ <<<"$${v:-0.0}"; [[ $$ma =~ ^[0-9]+$$ && $$mi =~ ^[0-9]+$$ ]] && \
	{ ((ma >= 24)) || ((ma == 22 && mi >= 13)) || ((ma == 20 && mi >= 19)); })

$(ESLINT):
	@if ! command -v npm >/dev/null 2>&1; then \
	  cand=$$(apt-cache policy nodejs 2>/dev/null | awk '/Candidate:/ { print $$2 }'); \
	  if ! $(call node_ok,"$$cand"); then \
	    echo "lint: ESLint $(ESLINT_VERSION) needs npm and node ^20.19, ^22.13 or >= 24; this machine has no npm and Debian's nodejs here is $${cand:-none}: install a newer nodejs with npm (NodeSource's, or Debian 13's), then rerun make lint" >&2; exit 2; fi; \
	  $(call apt_install,lint,npm,--no-install-recommends); \
	fi
	@if ! $(call node_ok,"$$(node --version 2>/dev/null)"); then \
	  echo "lint: ESLint $(ESLINT_VERSION) needs node ^20.19, ^22.13 or >= 24 (this machine: $$(node --version 2>/dev/null || echo none)): install a newer nodejs, then rerun make lint" >&2; exit 2; fi
	@mkdir -p $(ESLINT_DIR)
	npm install --prefix $(ESLINT_DIR) --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
	  eslint@$(ESLINT_VERSION) @eslint/js@$(ESLINT_JS_VERSION) globals@$(ESLINT_GLOBALS_VERSION) >/dev/null
	@test -x $@ || { echo "lint: $@ not installed (is npm installed?)"; exit 1; }

$(INFERNO_ROOT)/bin/inferno-flamegraph:
	$(CARGO) install --quiet --locked --root $(INFERNO_ROOT) --version $(INFERNO_VERSION) inferno

build: .setup-stamp .build-stamp-$(ASAN)  ## (re)build the C extensions in place

.build-stamp-$(ASAN): $(NATIVE_SRC) setup.py
	@rm -f .build-stamp-*
	ASAN=$(ASAN) $(PY) setup.py -q build_ext --inplace --force >/dev/null
	@touch $@

demo: setup  ## write reports of the bundled sample trace into out/
	@mkdir -p $(OUT)
	$(FTFLAME) report $(SAMPLE) -o $(OUT)/sample.txt
	$(FTFLAME) report $(SAMPLE) -o $(OUT)/sample.json
	$(FTFLAME) report $(SAMPLE) -o $(OUT)/sample.folded
	$(FTFLAME) report $(SAMPLE) -o $(OUT)/sample.html
	@echo; head -n 40 $(OUT)/sample.txt; echo "..."; echo "demo: reports written to $(OUT)/"
	@echo "ftflame is in .venv/bin: '. .venv/bin/activate' puts it on PATH (then: ftflame report --help)"

# ASAN=1: libasan is preloaded into python and so into every child process;
# chromium does not start under it, and the browser tests do not exercise the
# C core: they are left out of the sanitized run. So are the collector's tests
# (tests/test_collect_*.py: shell scripts and fakes, no C of ours), whose
# timing bounds (a signal stops a recording within 3.5 s) do not hold when
# every bash, sleep and fake they start loads libasan. So are the batch tests
# (-m batch, tests/test_batch.py): process pools and a Dask cluster, each
# worker loading libasan, for no C that tests/test_parquet.py does not run.
# So is tests/test_diff_runs.py: the diff's statistics over six repeated runs
# (numpy), about 2.5 minutes under ASan, whose reading of six traces every
# fixture test runs already (CI's 90 minutes).
# allocator_may_return_null:
# an allocation larger than ASan supports returns NULL, as libc's would, so
# running out of memory stays the MemoryError the tests expect, not an abort.
ASAN_PYTEST := -m "not browser and not batch" $(foreach f,$(wildcard tests/test_collect_*.py),--ignore=$(f)) \
               --ignore=tests/test_diff_runs.py
# The traces: tests/data/fixtures, and the full corpus when there is one
# (FTFLAME_FIXTURES=DIR, else ../shared/fixtures): see tests/helpers/corpus.py. -rs
# lists every skipped test with its reason at the end. pytest's exit code 5
# (no test selected) fails the run, unless PYTEST_ARGS chose the tests: a suite
# that collects nothing has not passed.
test: setup  ## run the test suite (unit, golden, invariants on every fixture, browser); lists what it skipped
	@rc=0; FTFLAME_INFERNO_ROOT=$(INFERNO_ROOT) FTFLAME_SPEEDSCOPE_SCHEMA=$(abspath $(SPEEDSCOPE_SCHEMA)) \
	$(if $(filter 1,$(ASAN)),LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1,) \
	  $(PY) -m pytest -q -rs $(if $(filter 1,$(ASAN)),$(ASAN_PYTEST),) $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc = 5 ]; then echo "make test: no test selected$(if $(PYTEST_ARGS),, by pytest: a suite that collects nothing fails)"; \
	  $(if $(PYTEST_ARGS),rc=0,:); fi; exit $$rc

# Lint: ruff (rules in pyproject.toml), shellcheck on every shell script,
# every C unit of every extension (NATIVE_DIRS) compiled with warnings as
# errors (same warnings as setup.py), each with its own folder's headers, into
# a throwaway directory, so the in-place build is left alone; and the C files'
# style (tests/c_lint.py says its rules).
SHELL_SCRIPTS := $(wildcard collect/*.sh tests/vm/*.sh) .ci/run
PRODUCTION_DIRS := ftflame parse report collect templates
CORE_WARNINGS := -Wall -Wextra -Wno-unused-parameter -Werror

lint: .setup-stamp $(ESLINT)  ## ruff, mypy, shellcheck, ESLint on the page scripts (installs ESLint and, if missing, npm), every C unit with -Werror, C style
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/mypy  # ftflame/model and ftflame/correct (pyproject.toml)
	@# a comment says the reason, not the number of a tracker the repository does not hold
	@if grep -rnE "[Ii]ssues? #?[0-9]+" $(PRODUCTION_DIRS) --include='*.py' --include='*.c' --include='*.h' \
	  --include='*.js' --include='*.sh' --include='*.html'; then echo "lint: cite the reason, not an issue number"; exit 1; fi
	shellcheck $(SHELL_SCRIPTS)
	@# each page's scripts joined as its inline <script> has them (eslint.config.cjs)
	@rm -rf build/jslint && mkdir -p build/jslint && for page in $(JS_PAGES); do \
	  { if grep -q '^"use strict";$$' $$page; then echo '"use strict";'; fi; \
	    for f in $$(sed -n 's/^{% include "\(.*\.js\)" %}$$/\1/p' $$page); do cat templates/$$f; done; \
	  } > build/jslint/$$(basename $$page).js; done
	NODE_PATH=$(ESLINT_DIR)/node_modules $(ESLINT) --no-config-lookup -c templates/eslint.config.cjs build/jslint/
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	cflags="-std=gnu11 -O2 $(CORE_WARNINGS) $$(pkg-config --cflags libtracecmd libtraceevent libtracefs) \
	  -I$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" && \
	for d in $(NATIVE_DIRS); do for f in $$d/*.c; do \
	  gcc $$cflags -I$$d -c $$f -o "$$tmp/$$(basename $$f .c).o" || exit 1; done; done && \
	echo "lint: $(addsuffix /*.c,$(NATIVE_DIRS)) compile with $(CORE_WARNINGS)"
	$(PY) tests/c_lint.py $(NATIVE_DIRS)

# The damaged trace.dat corpus (tests/helpers/damage.py, made at test time from the
# fixtures): make test runs a sample of it, this the whole (a few hundred files);
# PYTEST_ARGS=--runxfail lists what libtracecmd (xfail) gets wrong.
test-damage: setup  ## every damaged trace.dat of tests/helpers/damage.py's corpus through ftflame report, each reader
	FTFLAME_DAMAGE=all $(PY) -m pytest -q -rs tests/test_damaged_dat.py $(PYTEST_ARGS)

golden: setup  ## regenerate golden outputs (tests/data/events/expected), then review the diff
	UPDATE_GOLDEN=1 $(PY) -m pytest -q tests/test_golden.py

# S31: <kernel>/s31-icount-truth folders of make fixtures not yet curated (the curated set and the corpus are read anyway)
model-error: setup  ## regenerate ftflame/correct/model_error.json from the truth pairs, then review the diff
	PYTHONPATH=tests $(PY) -m helpers.truthpairs $(foreach d,$(S31),--s31 $(d))

# MUTATE_ARGS: --quick (figure-checking test files only), mutation names, --list
mutate: setup  ## make each listed mistake in turn (tests/mutate.py), run the suite, report kill rate and survivors
	FTFLAME_INFERNO_ROOT=$(INFERNO_ROOT) FTFLAME_SPEEDSCOPE_SCHEMA=$(abspath $(SPEEDSCOPE_SCHEMA)) \
	  $(PY) tests/mutate.py $(MUTATE_ARGS)

setup-fuzz:  ## install clang and libFuzzer (Debian packages) for make fuzz
	@$(call apt_install,setup-fuzz,$(FUZZ_PKGS))

$(FUZZ_DIR)/fuzz_text: $(FUZZ_SRC) parse/core/fuzz_common.h parse/core/builder.h parse/core/reader_text.h parse/core/u64map.h
	@mkdir -p $(FUZZ_DIR)
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -fno-omit-frame-pointer -Iparse/core $(FUZZ_SRC) -o $@

$(FUZZ_DIR)/fuzz_dat: $(FUZZ_DAT_SRC) parse/core/fuzz_common.h parse/core/dat.h parse/core/record_decode.h parse/core/u64map.h
	@mkdir -p $(FUZZ_DIR)
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -fno-omit-frame-pointer -Iparse/core $(FUZZ_DAT_SRC) -lzstd -lz -o $@

# trace.dat seeds: small hand-made files, v6 and v7, uncompressed, zstd and zlib, big-endian
# and 32-bit (tests/helpers/datwriter.py)
$(FUZZ_DIR)/dat-seeds/.stamp: tests/helpers/datwriter.py
	@rm -rf $(FUZZ_DIR)/dat-seeds
	$(PY) tests/helpers/datwriter.py $(FUZZ_DIR)/dat-seeds
	@touch $@

# Seeds: each file is one control byte (bit 0: mail mode; bits 1-3: chunk
# size) followed by text: every hand-made input, the first 12 KB of every
# text fixture, of trace-cmd report forms of a small trace.dat, and the mail
# seed (all in tests/data).
$(FUZZ_DIR)/seeds/.stamp: $(wildcard tests/data/text/*.txt tests/data/seeds/*.txt) $(TEXT_FIXTURES)
	@rm -rf $(FUZZ_DIR)/seeds && mkdir -p $(FUZZ_DIR)/seeds
	@for f in tests/data/text/*.txt; do b=$$(basename $$f .txt); \
	  for c in 0 6; do m=$$c; case $$b in mail*) m=$$((c + 1));; esac; \
	    { printf "\\$$(printf %03o $$m)"; cat $$f; } > $(FUZZ_DIR)/seeds/$$b-$$c; done; done
	@for f in $(TEXT_FIXTURES); do b=$$(basename $$f .txt.gz); \
	  { printf '\016'; zcat $$f | head -c 12288; } > $(FUZZ_DIR)/seeds/$$b; done
	@dat=tests/data/fixtures/k6.1/s15-icount-calib/trace-full.dat; \
	if [ -f $$dat ] && command -v trace-cmd >/dev/null; then \
	  for o in "" "-R" "-l" "-t" "-O fgraph:tailprint -O fgraph:depth" "-N"; do \
	    { printf '\010'; trace-cmd report $$o $$dat 2>/dev/null | head -c 12288; } \
	      > $(FUZZ_DIR)/seeds/tracecmd$$(echo "$$o" | tr -c 'a-zA-Z0-9' _); done; fi
	@for f in tests/data/seeds/002_*.txt; do { printf '\001'; cat $$f; } > $(FUZZ_DIR)/seeds/mail-seed; done
	@touch $@

fuzz: $(FUZZ_DIR)/fuzz_text $(FUZZ_DIR)/seeds/.stamp $(FUZZ_DIR)/fuzz_dat $(FUZZ_DIR)/dat-seeds/.stamp  ## fuzz the text tokenizer and the trace.dat reader, each with the builder (FUZZ_SECONDS=60 each); fails on any finding
	@mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/findings $(FUZZ_DIR)/dat-corpus
	$(FUZZ_DIR)/fuzz_text -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -dict=parse/core/fuzz_text.dict -timeout=10 \
	  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/findings/ \
	  $(FUZZ_DIR)/corpus $(FUZZ_DIR)/seeds
	$(FUZZ_DIR)/fuzz_dat -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/findings/dat- \
	  $(FUZZ_DIR)/dat-corpus $(FUZZ_DIR)/dat-seeds

# The VM tests (tests/vm, collect/README.md): qemu boots Debian's kernels over
# the host's root filesystem with virtme-ng; the guest runs these tools.
VM_APT_PKGS := qemu-system-x86 busybox-static cpio kmod nfs-kernel-server rpcbind fio \
               trace-cmd iproute2 procps util-linux xz-utils linux-perf
# 5.10 (bullseye) and 7.x (the newest 7.x of trixie-backports or sid) come from
# suites the host's apt does not list: tests/vm/kernels.sh fetches them through
# a private apt state (tests/vm/other-suites.sources), never installed.
VM_KERNELS  ?= 5.10 6.1 6.12 7.x
# iozone3 is in Debian's non-free component: setup-vm enables it in a sources
# file of its own (same URIs and suites as the machine's Debian entry), for
# iozone only, and says so; the machine's own sources are left as they are.
NONFREE_SOURCES := /etc/apt/sources.list.d/ftflame-non-free.sources

setup-vm:  ## install what make test-vm needs: qemu, NFS server, fio, iozone3 (non-free), virtme-ng (quick when done)
	@$(call apt_install,setup-vm,$(VM_APT_PKGS),--no-install-recommends)
	@if ! dpkg -s iozone3 >/dev/null 2>&1; then \
	  if ! apt-cache show iozone3 >/dev/null 2>&1 && [ ! -e $(NONFREE_SOURCES) ]; then \
	    src=$$(grep -lsE '^URIs:.*debian(/)?$$' /etc/apt/sources.list.d/*.sources | head -n 1); \
	    uris=$$(awk '/^URIs:/ { sub(/^URIs: */, ""); print; exit }' "$$src" 2>/dev/null); \
	    suites=$$(awk '/^Suites:/ { sub(/^Suites: */, ""); print; exit }' "$$src" 2>/dev/null); \
	    if [ -z "$$uris" ] || [ -z "$$suites" ]; then \
	      echo "setup-vm: iozone3 is in Debian's non-free component and no deb822 Debian entry was found in /etc/apt/sources.list.d to copy: add 'non-free' to your Debian sources, then rerun" >&2; exit 2; fi; \
	    echo "setup-vm: enabling Debian's non-free component for iozone3 only: writing $(NONFREE_SOURCES) ($$uris $$suites)"; \
	    printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
	      "$$uris" "$$suites" > $(NONFREE_SOURCES); \
	  fi; \
	  echo "setup-vm: installing Debian packages: iozone3"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iozone3 >/dev/null; \
	fi
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -c 'import virtme_ng, pytest' 2>/dev/null || $(PY) -m pip install -q "virtme-ng>=1.30,<2" "pytest>=7,<10"

test-vm: setup setup-vm  ## boot Debian's 5.10, 6.1, 6.12 and newest 7.x kernels in qemu, test collect.sh on an NFS server inside (about 30 min, kernels cached)
	tests/vm/run.sh $(VM_KERNELS)

# The full fixture corpus, recorded again in qemu (tests/vm/fixtures.sh: one VM
# per scenario of tests/vm/fixtures/, Debian's 5.10, 6.1, 6.12 and 7.x kernels) into
# FIXTURES_OUT, for FTFLAME_FIXTURES=$(FIXTURES_OUT) make test; SCENARIOS=k6.1/s04-null
# records only some. tests/data/fixtures/make.sh cuts the curated set from it.
FIXTURES_OUT ?= build/fixtures
SCENARIOS    ?=
FIXTURE_APT_PKGS := linux-perf

fixtures: setup setup-vm  ## record the full fixture corpus in qemu into FIXTURES_OUT (default build/fixtures; long)
	@$(call apt_install,fixtures,$(FIXTURE_APT_PKGS),--no-install-recommends)
	tests/vm/fixtures.sh $(FIXTURES_OUT) $(SCENARIOS)

# An 8-10 M-event trace.dat recorded in qemu (6.12, tests/vm/fixtures/k6.12/s18-long)
# for the reader's bench rows: one VM, CPU-heavy (TCG) for about 3 min; never committed.
# bench-long times the reports on it (bench/run.py; about 10 min).
LONG_TRACE := $(FIXTURES_OUT)/k6.12/s18-long/trace.dat
fixture-long: setup setup-vm  ## record the long bench trace (8.4 M events, 86 MiB) into FIXTURES_OUT/k6.12/s18-long (3 min)
	tests/vm/fixtures.sh $(FIXTURES_OUT) k6.12/s18-long

# The same workload with a small buffer written through the 9p share, so the
# ring buffer overwrites: millions of lost events in hundreds of gaps (the
# shape of an overloaded recording), for the bench rows with lost events.
LONG_LOST_TRACE := $(FIXTURES_OUT)/k6.12/s18-long-lost/trace.dat
fixture-long-lost: setup setup-vm  ## record the long bench trace with lost events into FIXTURES_OUT/k6.12/s18-long-lost (5 min)
	tests/vm/fixtures.sh $(FIXTURES_OUT) k6.12/s18-long-lost

# The same workload, longer, into the guest's tmpfs with trace-cmd held to a share
# of a CPU (cgroup v2), recorded again until a fifth to a third of the events are
# lost: the shape of the held-out trace the bench bounds were set on (10 M events, 23%).
LONG_THROTTLED_TRACE := $(FIXTURES_OUT)/k6.12/s18-long-throttled/trace.dat
fixture-throttled: setup setup-vm  ## record the long bench trace with a fifth of its events lost into FIXTURES_OUT/k6.12/s18-long-throttled (2-6 min)
	tests/vm/fixtures.sh $(FIXTURES_OUT) k6.12/s18-long-throttled

bench-long: setup  ## make bench's tables on the long trace, and on it twice as long (make fixture-long first)
	@test -f $(LONG_TRACE) || { echo "bench-long: $(LONG_TRACE) is missing: run make fixture-long first" >&2; exit 2; }
	$(PY) bench/run.py --reps 3 --roots 0 --no-diff $(LONG_TRACE)

# issue 41: where the report's CPU goes against the zstd floor, and this checkout against
# REV (default main) in the same rounds, on the long traces that exist (else a curated one)
REV ?= main
LONG_TRACES = $(wildcard $(LONG_TRACE) $(LONG_LOST_TRACE) $(LONG_THROTTLED_TRACE))
bench-phases: setup  ## the report's CPU by phase against the zstd floor on the long traces (make fixture-long, fixture-long-lost, fixture-throttled)
	@test -n "$(LONG_TRACES)" || { echo "bench-phases: no long trace: run make fixture-long first" >&2; exit 2; }
	$(PY) bench/phases.py $(LONG_TRACES)
bench-revs: setup  ## this checkout against REV=main, interleaved CPU and wall medians as ratios, on the long traces (else a curated fixture)
	$(PY) bench/revs.py $(REV) . $(LONG_TRACES)

bench-timeline: setup  ## what each thread of the report does over time (perf samples per 20 ms), text and JSON, on the long traces
	@$(call apt_install,bench-timeline,linux-perf,--no-install-recommends)
	@for t in $(or $(LONG_TRACES),$(wildcard tests/data/fixtures/k6.12/s30-repeat/run1/trace.dat)); do \
	  for f in txt json; do $(PY) bench/timeline.py --format $$f $$t || exit $$?; done; done

bench-counts: setup  ## the read's instructions and cache misses (valgrind), this checkout against REV=main: figures the load does not move
	@$(call apt_install,bench-counts,valgrind,--no-install-recommends)
	$(PY) bench/read_counts.py --top 10 $(REV) . $(or $(LONG_TRACES),$(wildcard tests/data/fixtures/k6.12/s30-repeat/run1/trace.dat))

bench: setup  ## benchmark against trace-cmd report and a bare libtracecmd loop; ftflame batch throughput; the Perfetto output on long traces
	$(PY) bench/run.py
	$(PY) bench/text_long.py
	$(PY) bench/batch.py
	$(PY) bench/perfetto_long.py

clean:  ## remove build products (keeps the venv)
	rm -rf build *.egg-info $(NATIVE_SO) .build-stamp-* $(OUT)
