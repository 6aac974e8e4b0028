# Every target bootstraps .venv itself, so a fresh clone needs nothing but python3. `make run`
# installs only the hub (the `hub` extra), `make bench` only the `bench` extra; the targets
# that need more (test, lint, docs, bench-asv) install the `dev` extra, everything.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HUB_STAMP := $(VENV)/.installed-hub
BENCH_STAMP := $(VENV)/.installed-bench
EXTRAS ?= dev

.PHONY: run run-tls test lint docs bench bench-docs bench-asv bench-compare dist clean system-deps

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP) $(HUB_STAMP) $(BENCH_STAMP)

$(HUB_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[hub]"
	touch $(HUB_STAMP)

$(BENCH_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[bench]"
	touch $(BENCH_STAMP)

# The demo hub holds the public development key (loopback only), so `skipfilter token --dev`
# mints its tokens; the hub prints a subscribe and a publish command to paste.
PATH_HINT = @echo 'skipfilter is in $(CURDIR)/$(VENV)/bin: export PATH="$(CURDIR)/$(VENV)/bin:$$PATH" in another shell to run it (skipfilter token --dev, skipfilter hub --help); paste the subscribe and publish commands the hub prints below'

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

# Four pytest workers whatever the cores: most tests wait on servers they start, so on 2
# cores 4 workers took 8.5 min where one per core took 13 (3,026 tests, one clean clone
# each). Spark's tests share one worker and one session per group (tests/conftest.py).
# PYTEST_ARGS="-n 0" runs everything in one process.
PYTEST_ARGS ?= --numprocesses=4 --dist loadgroup
test: $(STAMP) system-deps
	$(PY) -m pytest -q --durations=25 $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check skipfilter tests benchmarks rigs examples
	$(VENV)/bin/mypy

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

# The quick side-by-side report (about 90 s): tables on the terminal, the same tables as
# markdown and the charts under .bench/ (untracked); nothing tracked is touched. Needs only
# the `bench` extra. BENCH_ARGS="--sizes 1k,10k,100k" (or no --quick) for a longer one.
BENCH_DIR ?= .bench
BENCH_ARGS ?= --quick
bench: $(BENCH_STAMP)
	$(VENV)/bin/skipfilter bench $(BENCH_ARGS) --plot $(BENCH_DIR)/img --markdown $(BENCH_DIR)/benchmarks.md

# On purpose only: the report of docs/benchmarks.md (every size up to 1M, long) regenerates
# the tracked docs/benchmarks.md and docs/img.
bench-docs: $(BENCH_STAMP)
	$(VENV)/bin/skipfilter bench --sizes 1k,10k,100k,1M --messages 2000 --budget 2 \
	  --memory-sizes 10k,100k,1M --plot docs/img --markdown docs/benchmarks.md

# The asv suites, results keyed by commit under .asv/ (ASV_ARGS=--quick for one sample each:
# asv keeps nothing from a run that is stopped).
ASV_ARGS ?=
bench-asv: $(STAMP)
	$(VENV)/bin/asv machine --yes >/dev/null
	$(VENV)/bin/asv run --python=same $(ASV_ARGS) --show-stderr --set-commit-hash $$(git rev-parse HEAD)

# Compare the asv results recorded by `make bench-asv` at two commits (see docs/benchmarks.md).
BASE ?= HEAD~1
NEW ?= HEAD
bench-compare: $(STAMP)
	$(VENV)/bin/asv compare --split --factor 1.1 $$(git rev-parse $(BASE)) $$(git rev-parse $(NEW))

# The sdist and the wheel into dist/ (LICENSE in both; the sdist also holds docs/ and tests/):
# `pip install 'dist/skipfilter-VERSION-py3-none-any.whl[hub]'` anywhere.
dist: $(STAMP)
	rm -rf dist
	$(PY) -m build --outdir dist .

clean:
	rm -rf $(VENV) site .asv .bench dist build .pytest_cache .mypy_cache .hypothesis .hub-demo-tls
