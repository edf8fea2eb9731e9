# The two set-up commands of the README, complete on a fresh machine (docs/development.md
# describes the other targets; tests/test_docs.py checks the recipes the docs rely on):
#   make demo  - install and run the main job
#   make test  - install and run the whole test suite
#
# Installs the way a user would (not editable, not by PYTHONPATH): the server
# (server/, distribution jetstream-server), the connector (this directory,
# spark-jetstream), the management CLI (cli/, jetstream-cli) and the
# development-only test harness (testing/), so that a packaging mistake fails the
# tests. Any source change reinstalls them.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEPS   := $(VENV)/.deps-installed
STAMP  := $(VENV)/.installed
SOURCES := $(shell find spark_jetstream pyspark_jetstream server/src testing/src cli/src -name '*.py' -o -name py.typed -o -path '*/dashboard_page/*' 2>/dev/null) server/setup.py
PACKAGES := ./server ./testing ./cli .

.PHONY: demo test lint bench bench-quick install clean test-spark-versions

install: $(STAMP)

# Dependencies (slow, rarely changes): only when a pyproject changes. The server is not
# compiled here: the reinstall below compiles it (server/setup.py), once.
$(DEPS): Makefile pyproject.toml server/pyproject.toml testing/pyproject.toml cli/pyproject.toml scripts/ensure-java.sh
	bash scripts/ensure-java.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	JETSTREAM_SERVER_COMPILE=0 $(BIN)/python -m pip install --quiet './server[bcrypt,nkeys,websocket,snapshot,speedups]' ./testing ./cli '.[server,nkeys,jobs,test]'
	touch $(DEPS)

# Our four packages: whenever a source file changes (a minute or two: the server's hot
# modules are compiled, server/setup.py).
# setuptools' build/ directories keep modules deleted or moved in the sources:
# removed first, so the installed packages hold exactly what the sources hold.
$(STAMP): $(DEPS) $(SOURCES)
	rm -rf build server/build testing/build cli/build
	$(BIN)/python -m pip install --quiet --no-deps --force-reinstall $(PACKAGES)
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m jobs.orders_pipeline

# The suite in two worker processes (pytest-xdist), one test file per worker at a time so
# that a module's shared servers, clusters and venvs start once; a single test process
# spends most of its time waiting (server starts, JVMs, timeouts), not on the CPU. The files go
# out slowest first (tests/support/file_schedule.py; docs/test-suite-time.md).
# `make test PYTEST_WORKERS=` runs it in one process.
PYTEST_WORKERS ?= -n 2 --dist loadfile

test: $(STAMP)
	bash scripts/ensure-chromium.sh
	$(BIN)/ruff check server testing cli spark_jetstream jobs tests
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_WORKERS)

lint: $(STAMP)
	$(BIN)/ruff check server testing cli spark_jetstream jobs tests
	$(BIN)/lint-imports
	$(BIN)/mypy

# The connector on every pyspark it supports (issue 21): one virtual environment per
# version under .venv-spark/<version> (pip's cache keeps a rebuild fast), the four
# packages installed there as in .venv but the server pure Python (not compiled: the
# bundled server's tests there run its pure build), and the connector's version-matrix tests
# (marker spark_matrix: quick start, the `latest` start, the SIGKILL exactly-once test,
# registration by Spark's own lookup) run on each. `make test-spark-versions
# SPARK_VERSIONS="4.0.5 4.3.0"` runs some of them; each prints its time.
SPARK_VERSIONS ?= 4.0.5 4.1.4 4.2.1 4.3.0
SPARK_VENVS    := .venv-spark
MATRIX_SERVERS ?= bundled,nats-server
# the files holding the spark_matrix tests (the others may import what older versions lack)
MATRIX_TESTS := $(addprefix tests/connector/integration/,test_spark_versions.py test_legacy_stream_reader.py \
	test_latest_start.py test_latest_crash.py test_exactly_once_crash.py test_spark_connect.py \
	test_read_only.py test_consumer_read.py test_pushdown.py)

.PRECIOUS: $(SPARK_VENVS)/%/.deps-installed $(SPARK_VENVS)/%/.installed

test-spark-versions: $(addprefix spark-version-,$(SPARK_VERSIONS))
	@echo "the version matrix passed on pyspark $(SPARK_VERSIONS)"

spark-version-%: $(SPARK_VENVS)/%/.installed
	@start=$$(date +%s); \
	JS_TEST_SERVERS=$(MATRIX_SERVERS) $(SPARK_VENVS)/$*/bin/pytest -q -p no:cacheprovider $(PYTEST_WORKERS) -m spark_matrix $(MATRIX_TESTS); \
	status=$$?; echo "pyspark $*: exit $$status in $$(( $$(date +%s) - start ))s"; exit $$status

$(SPARK_VENVS)/%/.deps-installed: Makefile pyproject.toml server/pyproject.toml testing/pyproject.toml cli/pyproject.toml scripts/ensure-java.sh
	bash scripts/ensure-java.sh
	test -x $(SPARK_VENVS)/$*/bin/python || $(PYTHON) -m venv $(SPARK_VENVS)/$*
	$(SPARK_VENVS)/$*/bin/python -m pip install --quiet --upgrade pip
	JETSTREAM_SERVER_COMPILE=0 $(SPARK_VENVS)/$*/bin/python -m pip install --quiet 'pyspark==$*' './server[bcrypt,nkeys,websocket,snapshot,speedups]' ./testing ./cli '.[server,nkeys,test]'
	touch $@

$(SPARK_VENVS)/%/.installed: $(SPARK_VENVS)/%/.deps-installed $(SOURCES)
	rm -rf build server/build testing/build cli/build
	JETSTREAM_SERVER_COMPILE=0 $(SPARK_VENVS)/$*/bin/python -m pip install --quiet --no-deps --force-reinstall $(PACKAGES)
	touch $@

bench: $(STAMP)
	$(BIN)/python -m jobs.benchmark

bench-quick: $(STAMP)
	$(BIN)/python -m jobs.benchmark --quick

clean:
	rm -rf $(VENV) $(SPARK_VENVS) build *.egg-info server/build server/src/*.egg-info testing/build testing/src/*.egg-info cli/build cli/src/*.egg-info
