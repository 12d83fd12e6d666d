# The two commands of the README: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Linting compiles the dbt project: keep its Spark metastore away from the real one.
LINT_ENV := HASHCDC_WAREHOUSE_DIR=target/lint/warehouse HASHCDC_METASTORE_DIR=target/lint/metastore_db

.PHONY: install demo test test-unit lint check clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: install
	$(BIN)/hashcdc demo

test: install
	$(BIN)/pytest

# The unit tier alone: config, generator, hashing vectors, CLI parsing; no Spark, seconds.
test-unit: install
	$(BIN)/pytest -m "not spark"

lint: install
	$(BIN)/ruff check hashcdc tests python_models
	$(BIN)/ruff format --check hashcdc tests python_models
	$(BIN)/hashcdc generate --check
	rm -rf target/lint && $(LINT_ENV) $(BIN)/sqlfluff lint models

check: test lint

clean:
	rm -rf target warehouse metastore_db landing bench_output
