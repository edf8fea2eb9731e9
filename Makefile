# The two set-up commands of the README, complete on a fresh machine:
#   make demo  - install and run the main job
#   make test  - install and run the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench bench-quick install clean

install: $(STAMP)

$(STAMP): pyproject.toml scripts/ensure-java.sh
	bash scripts/ensure-java.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m jobs.orders_pipeline

test: $(STAMP)
	$(BIN)/ruff check server spark_jetstream jobs tests
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check server spark_jetstream jobs tests
	$(BIN)/mypy server spark_jetstream jobs

bench: $(STAMP)
	$(BIN)/python -m jobs.benchmark

bench-quick: $(STAMP)
	$(BIN)/python -m jobs.benchmark --quick

clean:
	rm -rf $(VENV) build *.egg-info
