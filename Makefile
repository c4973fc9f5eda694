# One-command entry points. `make run` and `make test` set up whatever they need: `make run`
# only what the job runs (`setup`), `make test` what the tests use besides (`setup-test`).
SHELL := /bin/bash
PYTHON_BIN ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
CACHE := .cache
KAFKA_DIR := $(CACHE)/kafka/local
CONF ?= conf/local.yaml
MVN ?= mvn
MVN_FLAGS ?= -q -B

.PHONY: setup setup-test venv dev-venv bytecode jars driver-archive connect-venv airflow-venv connect-up \
        connect-down wheel run test \
        test-unit test-integration lint bench docs kafka-up kafka-down clean \
        conf-schema

CONNECT_DIR := $(CACHE)/connect
CONNECT_VENV := $(CONNECT_DIR)/venv

# What the job runs: its virtualenv (the project and its dependencies), the broker and Delta
# jars, the driver's class-data archive, its modules compiled.
setup: venv jars driver-archive bytecode

# What only the tests (and the linters, the docs and the benchmarks) use besides: the dev
# dependencies in the same virtualenv, the Connect server's Python, Airflow's virtualenv,
# and the tests' and benchmarks' modules compiled.
setup-test: setup dev-venv connect-venv airflow-venv
	$(PY) -m compileall -q tests bench

# The project's modules compiled once, as pip compiles a package it installs: a Python
# started where bytecode is never written (PYTHONDONTWRITEBYTECODE) would otherwise compile
# them again at every start (a third of a second of every thin client's start here). A
# module edited since is compiled again in memory when imported, as without this.
bytecode: venv
	$(PY) -m compileall -q lib schemas jobs dev

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON_BIN) >/dev/null || { echo "need $(PYTHON_BIN) on PATH"; exit 2; }
	test -x $(PY) || $(PYTHON_BIN) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

# The dev dependencies (pyproject.toml's `dev` extra: pytest, chispa, ruff, mypy, MkDocs,
# ...) added to the job's virtualenv.
dev-venv: $(VENV)/.dev-installed

$(VENV)/.dev-installed: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# Broker and Delta jars from Maven Central into a git-ignored cache; reruns are offline no-ops.
jars: $(CACHE)/jars/kafka/.done $(CACHE)/jars/delta/.done

$(CACHE)/jars/kafka/.done: lib/jvm/pom.xml
	rm -rf $(CACHE)/jars/kafka
	cd lib/jvm && $(MVN) $(MVN_FLAGS) -Pkafka dependency:copy-dependencies \
	  -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(CACHE)/jars/kafka
	touch $@

# Only Delta's own jars: Spark already ships the rest of their runtime closure.
$(CACHE)/jars/delta/.done: lib/jvm/pom.xml
	rm -rf $(CACHE)/jars/delta
	cd lib/jvm && $(MVN) $(MVN_FLAGS) -Pdelta dependency:copy-dependencies \
	  -DincludeScope=runtime -DincludeGroupIds=io.delta -DoutputDirectory=$(CURDIR)/$(CACHE)/jars/delta
	touch $@

# A class-data-sharing archive of the classes a driver run loads (jobs/driver_archive.py
# on throwaway tables); spark-submit.sh starts drivers with it. Remade when the venv
# (Spark) or the Delta jars change; a stale one is ignored by the JVM.
driver-archive: $(CACHE)/driver/driver.jsa

$(CACHE)/driver/driver.jsa: $(VENV)/.installed $(CACHE)/jars/delta/.done jobs/driver_archive.py spark-submit.sh
	mkdir -p $(CACHE)/driver
	rm -f $@.tmp
	PROVISIONING_DRIVER_ARCHIVE=off SPARK_SUBMIT_OPTS="-XX:ArchiveClassesAtExit=$(CURDIR)/$@.tmp" \
	  ./spark-submit.sh jobs/driver_archive.py > $(CACHE)/driver/archive.log 2>&1 \
	  || { tail -40 $(CACHE)/driver/archive.log; exit 1; }
	mv $@.tmp $@

# The Python of a stock Spark Connect server: pyspark[connect] alone (the versions
# pyproject.toml pins), nothing of this project: the job ships its own code to it.
connect-venv: $(CONNECT_VENV)/.installed

$(CONNECT_VENV)/.installed: pyproject.toml $(VENV)/.installed
	rm -rf $(CONNECT_VENV)
	$(PYTHON_BIN) -m venv $(CONNECT_VENV)
	$(CONNECT_VENV)/bin/pip install -q $$($(PY) -c 'import tomllib; \
	  deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]; \
	  print(" ".join(d for d in deps if d.split("[")[0].split("=")[0] in ("pyspark", "pandas", "pyarrow")))')
	touch $@

# Airflow for the example DAG's test (tests/integration/test_airflow_dag.py), in a
# virtualenv of its own (its pins would fight pyspark's), built once here rather than by a
# test run. The marker holds the pins it was built from; new pins rebuild it.
AIRFLOW_VENV := $(CACHE)/airflow-venv
AIRFLOW_PINS := tests/support/airflow-requirements.txt
airflow-venv: $(AIRFLOW_VENV)/.installed

$(AIRFLOW_VENV)/.installed: $(AIRFLOW_PINS)
	rm -rf $(AIRFLOW_VENV)
	$(PYTHON_BIN) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/pip install -q --disable-pip-version-check -r $(AIRFLOW_PINS)
	$(PYTHON_BIN) -c 'import sys; print("\n".join(open(sys.argv[1]).read().split()), end="")' \
	  $(AIRFLOW_PINS) > $@

# A local Spark Connect server on loopback (local[2], the Delta jars of the Maven cache),
# started once and kept warm; prints its sc:// address. `make connect-down` stops it.
connect-up: setup connect-venv
	$(PY) -m dev.sparkconnect up --dir $(CONNECT_DIR)/server

connect-down:
	@if [ -x $(PY) ]; then $(PY) -m dev.sparkconnect down --dir $(CONNECT_DIR)/server; fi

# The wheel: `pip install dist/topic_provisioning-*.whl` gives the `provision-topics`
# command (a plain Python process; with --remote or SPARK_REMOTE it needs no local JVM).
wheel: venv
	rm -rf dist
	$(PY) -m pip wheel -q --no-deps -w dist .

kafka-up: setup
	$(PY) -m dev.devkafka up --dir $(KAFKA_DIR)

kafka-down:
	@if [ -x $(PY) ]; then $(PY) -m dev.devkafka down --dir $(KAFKA_DIR); fi

# The embedded default: a local broker, local Delta tables, the example manifest.
run: kafka-up
	export KAFKA_BOOTSTRAP_SERVERS=$$($(PY) -m dev.devkafka status --dir $(KAFKA_DIR)) && \
	./spark-submit.sh jobs/load_manifest.py --source conf/examples/desired_topics.yaml \
	  --table warehouse/desired_topics && \
	./spark-submit.sh jobs/provision_topics.py apply --conf $(CONF)

test: setup-test
	PY=$(PY) tests/support/suites.sh

test-unit: setup-test
	$(PY) -m pytest tests/unit

test-integration: setup-test
	$(PY) -m pytest tests/integration

# The job (cold spark-submit and warm Spark Connect) against a plain kafka-python floor, a
# per-topic loop and, given TOPICCTL=path/to/topicctl (v1.23.1, built by the reader), the
# topicctl peer; plus the plan-only scale test, the pipelining measurement, the job's
# queries with and without generated code, a new JVM's first casing of a string, 1,000 ACL
# bindings batched against one request per binding, 1,000 client quotas set and removed
# batched against one request per entity, and what one audit append costs with and
# without Delta's transaction id, and `report --site` over 10,000 topics and 30 days of
# daily runs; results under bench/results/ (BENCHMARKS.md).
TOPICCTL ?=
bench: setup dev-venv connect-venv
	$(PY) bench/run.py $(if $(TOPICCTL),--topicctl $(TOPICCTL))
	$(PY) bench/check_scale.py $(if $(TOPICCTL),--topicctl $(TOPICCTL))
	$(PY) bench/waits.py $(if $(TOPICCTL),--topicctl $(TOPICCTL))
	$(PY) bench/codegen.py
	$(PY) bench/case_mappings.py
	$(PY) bench/acl_batch.py --out bench/results/acl_batch.json
	$(PY) bench/quota_batch.py --out bench/results/quota_batch.json
	./spark-submit.sh bench/delta_append.py --out bench/results/delta_append.json
	$(PY) bench/site_scale.py --out bench/results/site_scale.json

# The conf's and the manifest files' JSON Schemas, generated from their models
# (tests/unit/test_conf_schema.py and test_manifest_schema.py fail when a file in the repo
# is not what they make).
conf-schema: venv
	$(PY) -m provisioning.cli.schemas conf/provisioning.schema.json schemas/manifest.schema.json

# The docs site (MkDocs, Material theme) into build/site, strictly: a broken link, a missing
# page or a missing conf/provisioning.schema.json fails it. The reference pages are
# generated from the code as it builds (docs/gen_ref.py, called by docs/hooks.py).
docs: dev-venv
	$(VENV)/bin/mkdocs build --strict --clean

lint: dev-venv
	$(VENV)/bin/ruff check lib schemas jobs dev tests bench docs
	$(VENV)/bin/mypy

clean: kafka-down connect-down
	rm -rf $(CACHE)/dist dist build warehouse spark-warehouse
