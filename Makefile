# The two commands of the README: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
READERS := $(VENV)/readers
# Linting compiles the dbt project: keep its Spark metastore away from the real one.
LINT_ENV := HASHCDC_WAREHOUSE_DIR=target/lint/warehouse HASHCDC_METASTORE_DIR=target/lint/metastore_db

# The integration tests start PostgreSQL (a shared Hive metastore) and read it through
# Debian's JDBC driver; the server binaries (initdb, pg_ctl) come with Debian's postgresql.
# The report and dbt docs are checked in Debian's headless chromium; `hashcdc capture`'s
# MariaDB tests start Debian's mariadb-server (mariadbd) on loopback.
JDBC_JAR := /usr/share/java/postgresql.jar
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install class-archive test-services demo test test-unit lint check clean

install: $(VENV)/.installed $(READERS)/.installed jars/.fetched class-archive integration_tests/dbt_packages

# An apt-get install that refreshes the package lists first when they are stale or empty.
APT_INSTALL = $(SUDO) apt-get install -y -q $(1) || ($(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q $(1))

test-services: $(JDBC_JAR)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || $(call APT_INSTALL,postgresql)
	@command -v chromium >/dev/null 2>&1 || $(call APT_INSTALL,chromium)
	@test -x /usr/sbin/mariadbd || command -v mariadbd >/dev/null 2>&1 || $(call APT_INSTALL,mariadb-server)

$(JDBC_JAR):
	$(call APT_INSTALL,libpostgresql-jdbc-java)

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@# The editable install of a mapped package (dbt.adapters.hashcdc) makes setuptools print
	@# a general caution about folders named like the package: nothing to act on here.
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/pip install --quiet -e '.[dev,peer,bench]'
	touch $@

# DuckDB as a reader of the lake, beside the peer's own version (tests/readers.txt).
$(READERS)/.installed: tests/readers.txt $(VENV)/.installed
	$(BIN)/pip install --quiet --no-deps --target $(READERS) -r tests/readers.txt
	touch $@

# Spark's JVM packages (Delta Lake), from Maven Central into jars/, once (hashcdc/runtime/jars.py).
jars/.fetched: hashcdc/runtime/jars.py $(VENV)/.installed
	$(BIN)/python -m hashcdc.runtime.jars
	touch $@

# The demo's project (integration_tests/) installs hashcdc's dbt half, this checkout's
# root, as a package: `dbt deps` links it (hashcdc/runtime/scaffold.py).
integration_tests/dbt_packages: integration_tests/packages.yml $(VENV)/.installed
	$(BIN)/dbt deps --project-dir integration_tests --quiet
	touch $@

# The driver JVM's class archive (hashcdc/runtime/class_archive.py): Spark starts in about half
# the time. Built once per JVM and jar set (a minute or two); a no-op when up to date.
class-archive: jars/.fetched
	$(BIN)/python -m hashcdc.runtime.class_archive

demo: install
	$(BIN)/hashcdc --project-dir integration_tests demo

test: install test-services
	$(BIN)/pytest

# The unit tier alone: config, generator, hashing vectors, CLI parsing; no Spark, seconds.
test-unit: install
	$(BIN)/pytest tests/unit

lint: install
	$(BIN)/ruff check hashcdc tests python_models setup.py
	$(BIN)/ruff format --check hashcdc tests python_models setup.py
	$(BIN)/hashcdc generate --check
	$(BIN)/hashcdc --project-dir integration_tests generate --check
	rm -rf target/lint && $(LINT_ENV) $(BIN)/sqlfluff lint integration_tests/models

check: test lint

clean:
	rm -rf target warehouse metastore_db landing bench_output jars
	cd integration_tests && rm -rf target warehouse metastore_db landing dbt_packages logs
