# Two commands matter: `make run` and `make test`. Both create the virtualenv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test lint typecheck unit bench clean

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
	$(PY) -m pytest -m "not e2e" $(PYTEST_ARGS)

test: lint typecheck
	$(PY) -m pytest $(PYTEST_ARGS)

bench: setup
	$(PY) -m bench $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
