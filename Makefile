# mathembed developer entry points. `make help` lists the targets.
#
# Everything runs inside ./.venv, created from $(PYTHON) (3.11+) on first use.
# Installs are pinned in pyproject.toml and redone only when it changes (stamp files).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP_DEV := $(VENV)/.stamp-dev
STAMP_BENCH := $(VENV)/.stamp-bench
CARGO_TOML := metrics_rs/Cargo.toml
CARGO_MANIFEST := --manifest-path $(CARGO_TOML)
PY_SOURCES := mathembed pipelines flows tooling tests benchmarks docs/hooks

# Offline / no-telemetry switches: defined once in pipelines/common/offline.env (which
# pipelines.common.offline also reads). `?=` keeps a value already set in the environment,
# the same rule as os.environ.setdefault on the Python side.
OFFLINE_ENV_FILE := pipelines/common/offline.env
OFFLINE_LINES := $(shell grep -E '^[A-Z_][A-Z0-9_]*=' $(OFFLINE_ENV_FILE))
offline_key = $(firstword $(subst =, ,$(1)))
offline_value = $(patsubst $(call offline_key,$(1))=%,%,$(1))
OFFLINE_KEYS := $(foreach line,$(OFFLINE_LINES),$(call offline_key,$(line)))
$(foreach line,$(OFFLINE_LINES),$(eval $(call offline_key,$(line)) ?= $(call offline_value,$(line))))
export $(OFFLINE_KEYS)

.PHONY: help venv build test docs demo repro bench fmt clean distclean rust-tools browser offline-env services services-down pools

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  make \1\t/' | expand -t 22

venv: $(STAMP_DEV) ## create .venv and install mathembed (editable) with the dev extra

$(VPY):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "error: $(PYTHON) is older than 3.11; run e.g. 'make PYTHON=python3.11 ...'" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP_DEV): pyproject.toml | $(VPY)
	$(VPY) -m pip install --quiet -e '.[dev]'
	touch $@

$(STAMP_BENCH): pyproject.toml $(STAMP_DEV)
	$(VPY) -m pip install --quiet -e '.[dev,bench]'
	touch $@

# Always runs maturin; cargo's incremental build makes it quick when nothing changed.
build: $(STAMP_DEV) ## build metrics_rs (release) into .venv with maturin
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release -m $(CARGO_TOML)

# rustfmt and clippy are rustup components; add them only if they are missing
# (rustup needs network for that, so an already-present toolchain is left alone).
rust-tools:
	@cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@cargo clippy --version >/dev/null 2>&1 || rustup component add clippy

# The data-quality report test opens the HTML in a real headless Chromium (Debian's
# package). Installing it needs root and apt; elsewhere install it by hand.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing chromium (Debian package) for the report browser test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: rust-tools browser build ## Rust fmt/clippy/tests, ruff, mypy, stubtest, pytest
	cargo fmt $(CARGO_MANIFEST) --check
	cargo clippy $(CARGO_MANIFEST) --all-targets -- -D warnings
	cargo test $(CARGO_MANIFEST)
	$(VENV)/bin/ruff check $(PY_SOURCES)
	$(VENV)/bin/ruff format --check $(PY_SOURCES)
	$(VPY) -m mypy mathembed pipelines flows tooling
	$(VPY) -m mypy.stubtest metrics_rs
	$(VPY) -m pytest

# The manual (docs/, mkdocs.yml), offline: open site/index.html. `make test` builds it too,
# in strict mode, in tests/unit/test_docs.py. NO_MKDOCS_2_WARNING: Material's banner about
# MkDocs 2.0, which this pinned MkDocs 1.6 site does not use.
docs: $(STAMP_DEV) ## build the docs site offline into site/ (mkdocs build --strict)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# dvc.yaml's commands say `python -m ...`: the venv goes first on PATH so they use it.
repro: build ## run the pipeline (dvc repro: data, validate, train, evaluate) on the sample mirror, offline
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/dvc repro
	@$(VENV)/bin/mathembed report

# The main job on the embedded default, offline: the Prefect nightly flow once (ingest →
# data stages → validate → train → evaluate → promote → dvc push) on the sample mirror,
# ending with what it decided and why (mathembed report), then the registry and a search
# with the champion. A second run finds no new papers and ends early ("Nothing to do").
DEMO_QUERY ?= Cohen-Macaulay morphisms decompose into clopens of pure relative dimension
demo: build ## the nightly flow once on the sample mirror, then its results and a search
	$(VENV)/bin/mathembed nightly
	@status="$$($(VENV)/bin/mathembed status)"; echo "$$status"; \
	if grep -q '^champion *v' <<< "$$status"; then \
		$(VENV)/bin/mathembed search "$(DEMO_QUERY)" -k 3; \
	else \
		echo "no champion yet: the candidate did not beat the base model (reason above), so there is no model to search with"; \
	fi
	@echo "reports: reports/data_quality/index.html (data quality), reports/eval/*.png (evaluation); MLflow: mlruns/mlflow.db (mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db)"

# Real servers on 127.0.0.1, no Docker: moto S3, MLflow (artifacts on that S3), Prefect
# with the work pools infra/prefect.yaml deploys to.
SERVICES_DIR := .services
services: $(STAMP_DEV) ## start moto S3, an MLflow server and a Prefect server with its work pools on 127.0.0.1 (then: source .services/env.sh)
	$(VENV)/bin/mathembed services up --folder $(SERVICES_DIR)

services-down: ## stop what `make services` started
	$(VENV)/bin/mathembed services down --folder $(SERVICES_DIR)

# Another Prefect server (PREFECT_API_URL): the pools `prefect deploy` needs; idempotent.
pools: $(STAMP_DEV) ## create the work pools of infra/prefect.yaml on the Prefect server at PREFECT_API_URL
	$(VENV)/bin/mathembed pools

bench: $(STAMP_BENCH) build ## full metrics benchmark -> benchmarks/results/metrics.json
	$(VPY) benchmarks/bench_metrics.py

fmt: $(STAMP_DEV) ## format Rust and Python, apply safe lint fixes
	cargo fmt $(CARGO_MANIFEST)
	$(VENV)/bin/ruff check --fix $(PY_SOURCES)
	$(VENV)/bin/ruff format $(PY_SOURCES)

offline-env: ## print the offline switches as the recipes see them
	@for key in $(OFFLINE_KEYS); do echo "$$key=$${!key}"; done

clean: ## remove build outputs (cargo target, built .so) and tool caches (keeps .venv)
	cargo clean $(CARGO_MANIFEST)
	rm -f metrics_rs/python/metrics_rs/_metrics_rs.*.so
	rm -rf .mypy_cache .ruff_cache .pytest_cache .hypothesis build *.egg-info site
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean ## clean, and remove .venv too
	rm -rf $(VENV)
