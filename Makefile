# Every target bootstraps .venv itself, so a fresh clone needs nothing but python3. `make run`
# installs only the hub (the `hub` extra); the targets that need more (test, lint, docs,
# bench) install the `dev` extra, everything.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HUB_STAMP := $(VENV)/.installed-hub
EXTRAS ?= dev

.PHONY: run run-tls test lint docs bench bench-compare clean system-deps

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP) $(HUB_STAMP)

$(HUB_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[hub]"
	touch $(HUB_STAMP)

PATH_HINT = @echo 'skipfilter is in $(CURDIR)/$(VENV)/bin: export PATH="$(CURDIR)/$(VENV)/bin:$$PATH" in another shell to run it (skipfilter token --dev, skipfilter hub --help)'

run: $(HUB_STAMP)
	$(PATH_HINT)
	$(PY) -m skipfilter.cli hub --demo --addr $${HUB_ADDR:-127.0.0.1:3000} --history $${HUB_HISTORY:-.hub-demo.sqlite3}

# The demo over HTTPS with a self-signed certificate for localhost (made once with openssl,
# kept in .hub-demo-tls/): the page sets draft-08's __Secure-mercure_access_token cookie.
run-tls: $(HUB_STAMP) .hub-demo-tls/cert.pem
	$(PATH_HINT)
	$(PY) -m skipfilter.cli hub --demo --addr $${HUB_ADDR:-127.0.0.1:3443} --history $${HUB_HISTORY:-.hub-demo.sqlite3} --tls-cert .hub-demo-tls/cert.pem --tls-key .hub-demo-tls/key.pem

.hub-demo-tls/cert.pem:
	mkdir -p .hub-demo-tls
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
	  -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	  -keyout .hub-demo-tls/key.pem -out .hub-demo-tls/cert.pem 2>/dev/null

# System packages the tests drive for real: Debian's Chromium and its driver (never a
# test tool's own browser download), Redis and Sentinel for the multi-node hub, nginx and
# Caddy in front of it, wrk for the publish benchmark, systemd-analyze for the shipped unit,
# curl and openssl for the docs' commands (tests/test_docs_commands.py), a Java runtime for
# PySpark.
system-deps:
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null || missing="$$missing chromium-driver"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v redis-sentinel >/dev/null || missing="$$missing redis-sentinel"; \
	command -v nginx >/dev/null || missing="$$missing nginx"; \
	command -v caddy >/dev/null || missing="$$missing caddy"; \
	command -v wrk >/dev/null || missing="$$missing wrk"; \
	command -v systemd-analyze >/dev/null || missing="$$missing systemd"; \
	command -v curl >/dev/null || missing="$$missing curl"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	command -v java >/dev/null || missing="$$missing openjdk-17-jre-headless"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  else echo "missing system packages:$$missing (run: sudo apt-get install$$missing)"; fi; \
	fi

# One pytest worker per core (at most 4); Spark's tests share one worker and one session
# (tests/conftest.py). PYTEST_ARGS="-n 0" runs everything in one process.
PYTEST_ARGS ?= --numprocesses=auto --maxprocesses=4 --dist loadgroup
test: $(STAMP) system-deps
	$(PY) -m pytest -q --durations=25 $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check skipfilter tests benchmarks examples
	$(VENV)/bin/mypy

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

# asv suites (results keyed by commit; ASV_ARGS= for full sampling), then the side-by-side
# report that regenerates docs/benchmarks.md and docs/img (BENCH_ARGS=--quick for a short one).
ASV_ARGS ?= --quick
BENCH_ARGS ?=
bench: $(STAMP)
	$(VENV)/bin/asv machine --yes >/dev/null
	$(VENV)/bin/asv run --python=same $(ASV_ARGS) --show-stderr --set-commit-hash $$(git rev-parse HEAD)
	$(VENV)/bin/skipfilter bench $(BENCH_ARGS) --plot docs/img --markdown docs/benchmarks.md

# Compare the asv results recorded by `make bench` at two commits (see docs/benchmarks.md).
BASE ?= HEAD~1
NEW ?= HEAD
bench-compare: $(STAMP)
	$(VENV)/bin/asv compare --split --factor 1.1 $$(git rev-parse $(BASE)) $$(git rev-parse $(NEW))

clean:
	rm -rf $(VENV) site .asv .pytest_cache .mypy_cache .hypothesis .hub-demo-tls
