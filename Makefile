# ragchat — two commands on a fresh machine: `make run` and `make test`.
# Everything below installs what it needs on first use and is a no-op afterwards.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export HF_HUB_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# llama-cpp-python compiles from source. Its default build uses -march=native, which crashed on
# these CPUs (AMX code path), so we never use it: we list the instruction sets ourselves. Every
# x86-64 machine since 2015 gets AVX2 + FMA + F16C + BMI2; a building machine whose /proc/cpuinfo
# shows AVX-512 (F, CD, VL, DQ, BW) also gets that, with VBMI, VNNI and BF16 where present
# (docs/BENCHMARKS.md, finding 9). AMX stays off, whatever the CPU has.
# The default stays the portable AVX2 build: for the shipped SmolLM2 (Q4_1) the tuned build was not
# measurably faster. LLAMA_BUILD=auto builds for the machine's instruction sets.
LLAMA_VERSION := 0.3.36
LLAMA_BUILD ?= avx2
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2)
cpu_has = $(filter $(1),$(CPU_FLAGS))
LLAMA_VARIANT := avx2
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
ifeq ($(LLAMA_BUILD),auto)
ifeq ($(words $(call cpu_has,avx512f avx512cd avx512vl avx512dq avx512bw)),5)
LLAMA_VARIANT := avx512
LLAMA_CMAKE_ARGS += -DGGML_AVX512=ON
ifneq ($(call cpu_has,avx512vbmi),)
LLAMA_VARIANT := $(LLAMA_VARIANT)-vbmi
LLAMA_CMAKE_ARGS += -DGGML_AVX512_VBMI=ON
endif
ifneq ($(call cpu_has,avx512_vnni),)
LLAMA_VARIANT := $(LLAMA_VARIANT)-vnni
LLAMA_CMAKE_ARGS += -DGGML_AVX512_VNNI=ON
endif
ifneq ($(call cpu_has,avx512_bf16),)
LLAMA_VARIANT := $(LLAMA_VARIANT)-bf16
LLAMA_CMAKE_ARGS += -DGGML_AVX512_BF16=ON
endif
endif
else ifneq ($(LLAMA_BUILD),avx2)
$(error LLAMA_BUILD must be auto or avx2, not $(LLAMA_BUILD))
endif
WHEELHOUSE ?= $(HOME)/.cache/ragchat/wheels
# One folder per version and variant: the wheels' file names are the same for every variant.
LLAMA_WHEELS := $(WHEELHOUSE)/llama-$(LLAMA_VERSION)-$(LLAMA_VARIANT)
LLAMA_STAMP := $(LLAMA_WHEELS)/.built

HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-backend test-frontend lint schema migrate demo serve bench install frontend clean-venv

install: $(VENV)/.installed

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "ragchat needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip wheel

$(LLAMA_STAMP): | $(VENV)/bin/python
	@echo ">> building llama-cpp-python $(LLAMA_VERSION) ($(LLAMA_VARIANT) build; ~8-15 minutes, once per machine)"
	@mkdir -p $(LLAMA_WHEELS)
	rm -f $(LLAMA_WHEELS)/llama_cpp_python-*.whl
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" FORCE_CMAKE=1 $(PIP) wheel --no-cache-dir --no-deps \
	    -w $(LLAMA_WHEELS) "llama-cpp-python==$(LLAMA_VERSION)"
	echo "$(LLAMA_CMAKE_ARGS)" > $@

# The variant's wheel replaces whatever llama-cpp-python build the venv had (same version number).
$(VENV)/.installed: pyproject.toml $(LLAMA_STAMP) | $(VENV)/bin/python
	$(PIP) install --quiet --no-deps --force-reinstall $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl
	$(PIP) install --quiet --find-links $(LLAMA_WHEELS) -e ".[dev,local-llm,ocr]"
	@touch $@

migrate: install
	$(VENV)/bin/ragchat migrate

demo: migrate
	$(VENV)/bin/ragchat demo

serve: install
	$(VENV)/bin/ragchat serve --host $(HOST) --port $(PORT)

run: demo frontend
	$(VENV)/bin/ragchat serve --host $(HOST) --port $(PORT)

# Lint first: it takes a minute and fails fast on what the tests would not catch. The frontend is
# built before pytest, whose GraphiQL and wheel tests use the build. Then pytest runs on
# PYTEST_WORKERS xdist workers while the frontend's tests run beside it, and the time of each stage
# is printed at the end (.ci/stages). Database tests run on SQLite and on a local PostgreSQL
# (pgserver, started by the tests; tests/backends.py says which tests run on both).
BACKENDS ?= sqlite,postgresql
PYTEST_WORKERS ?= 3
test: install frontend-deps
	BACKENDS=$(BACKENDS) PYTEST_WORKERS=$(PYTEST_WORKERS) VENV=$(VENV) bash .ci/stages

# Frontend: npm packages (reinstalled when package-lock.json changes), Debian's Chromium for the
# browser tests (playwright-core drives it; no browser download), and the Vite build in frontend/dist.
FRONTEND := frontend
NPM_STAMP := $(FRONTEND)/node_modules/.npm-ci.stamp
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
FRONTEND_SOURCES = $(shell find $(FRONTEND)/src $(FRONTEND)/public $(FRONTEND)/scripts -type f -not -path '$(FRONTEND)/src/gql/*' 2>/dev/null) \
	$(wildcard $(FRONTEND)/*.html $(FRONTEND)/*.ts $(FRONTEND)/*.json) schema.graphql
.PHONY: frontend-deps

test-frontend: install frontend-deps frontend
	cd $(FRONTEND) && npm run --silent check:graphql
	cd $(FRONTEND) && npm run --silent test:unit
	cd $(FRONTEND) && npm run --silent test:e2e

frontend-deps: $(NPM_STAMP) | $(CHROMIUM)

$(CHROMIUM):
	@echo ">> installing Debian's chromium for the browser tests"
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium

$(NPM_STAMP): $(FRONTEND)/package-lock.json
	cd $(FRONTEND) && npm ci --no-audit --no-fund
	@touch $@

frontend: $(FRONTEND)/dist/index.html

$(FRONTEND)/dist/index.html: $(NPM_STAMP) $(FRONTEND_SOURCES)
	cd $(FRONTEND) && npm run --silent build
	@touch $@

# The README's pictures (docs/screenshots/) from a real run of the offline default (SmolLM2 and the
# local embedder) on the demo knowledge base, in a real browser. `make test` never rewrites them.
.PHONY: screenshots
screenshots: install frontend-deps frontend
	cd $(FRONTEND) && node e2e/screenshots.mjs

# ruff (lint and format), mypy; the frontend's tsc --noEmit and ESLint (frontend/eslint.config.js).
LINT_PATHS := app tests migrations benchmarks examples setup.py
lint: install $(NPM_STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy
	cd $(FRONTEND) && npm run --silent lint

schema: install
	$(VENV)/bin/ragchat export-schema > schema.graphql

bench: install
	$(VENV)/bin/python -m benchmarks.run

clean-venv:
	rm -rf $(VENV)
