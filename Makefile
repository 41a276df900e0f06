# ragchat — two commands on a fresh machine: `make run` and `make test`.
# Everything below installs what it needs on first use and is a no-op afterwards.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export HF_HUB_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# llama-cpp-python compiles from source. Its default build uses -march=native, which crashes on
# these CPUs (AMX code path), so we build a portable AVX2 wheel once and keep it outside the tree.
LLAMA_VERSION := 0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
WHEELHOUSE ?= $(HOME)/.cache/ragchat/wheels
LLAMA_STAMP := $(WHEELHOUSE)/.llama-$(LLAMA_VERSION)-portable

HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-backend test-frontend lint schema migrate demo serve bench install frontend clean-venv

install: $(VENV)/.installed

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "ragchat needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip wheel

$(LLAMA_STAMP): | $(VENV)/bin/python
	@echo ">> building llama-cpp-python $(LLAMA_VERSION) (portable AVX2 build; ~8 minutes, once per machine)"
	@mkdir -p $(WHEELHOUSE)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" FORCE_CMAKE=1 $(PIP) wheel --no-cache-dir --no-deps \
	    -w $(WHEELHOUSE) "llama-cpp-python==$(LLAMA_VERSION)"
	@touch $@

$(VENV)/.installed: pyproject.toml $(LLAMA_STAMP) | $(VENV)/bin/python
	$(PIP) install --quiet --find-links $(WHEELHOUSE) "llama-cpp-python==$(LLAMA_VERSION)"
	$(PIP) install --quiet --find-links $(WHEELHOUSE) -e ".[dev,local-llm]"
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
# built before pytest, whose GraphiQL and wheel tests use the build.
test: install frontend-deps lint frontend
	$(VENV)/bin/python -m pytest -q
	@if [ -f frontend/package.json ]; then $(MAKE) test-frontend; fi

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
