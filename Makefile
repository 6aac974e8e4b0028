# Every target bootstraps .venv itself, so a fresh clone needs nothing but python3.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS ?= dev

.PHONY: run test lint docs bench bench-compare clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m skipfilter.cli hub --demo --addr $${HUB_ADDR:-127.0.0.1:3000} --history $${HUB_HISTORY:-.hub-demo.sqlite3}

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check skipfilter tests benchmarks
	$(VENV)/bin/mypy

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(VENV)/bin/asv run --python=same --quick --show-stderr --set-commit-hash $$(git rev-parse HEAD)

clean:
	rm -rf $(VENV) site .asv .pytest_cache .mypy_cache .hypothesis
