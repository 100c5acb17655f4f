"""librdkafka's own test suite against a fresh minikafka process (`make peer-tests`).

    python -m tests.peer.librdkafka_suite [--version 2.15.1] [--tests 0001,0012] [--cluster]

Builds librdkafka and its test-runner once (tests/peer/librdkafka_build.py), starts a
broker from this tree on a free port with the settings of the suite's "default" scenario
(tests/scenarios/default.json: auto-created topics with 4 partitions), writes the suite's
test.conf and runs the suite with its own runner as librdkafka's `make broker` target
does through trivup: `run-test.sh -K -L -Q -E` (no known-issue tests, broker tests only,
quick mode, no sockem network emulation; trivup runs one test at a time, we run PARALLEL),
telling it the broker is Kafka 4.0.0. Prints pass/fail/skip counts and exits non-zero when a test of
tests/peer/librdkafka-<version>.must-pass fails or a failure is on no list.

`--cluster` runs the tests that need three brokers (CLUSTER_TESTS: replication factor 3,
fetching from a follower) against a simulated 3-node cluster in one broker process, with
brokers in racks RACK1..RACK3 as trivup's cluster names them and the RackAwareReplicaSelector,
judged against tests/peer/librdkafka-<version>-cluster.must-pass and .excluded.

`--share` runs the share-consumer tests (SHARE_TESTS, KIP-932, librdkafka 2.15+) against a
broker with share groups on (minikafka.share.version=1), the runner told the broker is
Kafka 4.4.0 (they need 4.2+), judged against tests/peer/librdkafka-<version>-share.must-pass
and .excluded; in the one-broker run they skip, as against Kafka 4.0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.peer import results
from tests.peer.librdkafka_build import BUILD, SOURCES, ensure_built, ensure_jdk, say
from tests.support.broker_process import BrokerProcess
from tests.support.kafka_reference import install_scripts

LISTS = Path(__file__).parent
RUNNER_FLAGS = ["-K", "-L", "-Q", "-E"]
# Most of the suite's time is spent waiting (session timeouts, max.poll.interval.ms, linger):
# three tests at once cut the run from about 7.5 to under 4 minutes here; each test uses its own
# topics and groups, and the runner stretches every timeout by parallel/3.
PARALLEL = 3
# The broker the suite's runner is told about: version-gated tests (TEST_BRKVER) run or
# skip as they do against Apache Kafka 4.0.
KAFKA_VERSION = "4.0.0"
RUN_TIMEOUT_S = 12 * 60
# Must-pass tests that failed and are run again alone (results.merge_retry); more
# failures than this in one run fail at once.
MAX_RETRIED = 3
# How many times they are: 0110_batch_size against 2.0.2 failed alone in 1 of 5 runs here,
# against this broker and the one before it alike (the client's own race, see
# results.merge_retry), so one run alone was not enough.
RETRY_RUNS = 3

BROKER_OVERRIDES = {
    # tests/scenarios/default.json: "auto_create_topics": "true", "num_partitions": 4.
    "auto.create.topics.enable": "true",
    "num.partitions": "4",
    # Kafka's shipped config/server.properties sets 0 "for development and testing", and
    # the suite's group tests wait for rebalances with that in mind.
    "group.initial.rebalance.delay.ms": "0",
    # trivup's KafkaBrokerApp (librdkafka's `make broker` cluster) runs every broker with
    # the ACL authorizer; resources without ACLs stay open to everyone, and the tests that
    # add ACLs through kafka-acls.sh (0109, 0115, 0119) need them enforced.
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "log.level": "INFO",
}

# The tests that need a 3-broker cluster, and the cluster they get: librdkafka's `make
# broker` runs them on trivup's 3-broker cluster, whose brokers have broker.rack
# RACK<node id> and, from Kafka 2.4, replica.selector.class RackAwareReplicaSelector
# (0101_fetch_from_follower picks a client.rack from the follower's id and skips unless
# DescribeConfigs shows three distinct racks).
CLUSTER_TESTS = "0098,0101,0103"
CLUSTER_SIZE = 3
CLUSTER_OVERRIDES = {
    **BROKER_OVERRIDES,
    "node.id": "1",
    "minikafka.cluster.size": str(CLUSTER_SIZE),
    "minikafka.cluster.racks": ",".join(f"RACK{n}" for n in range(1, CLUSTER_SIZE + 1)),
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
}

# librdkafka's share-consumer tests (TEST_BRKVER 4.2): a broker with share groups on, as a
# Kafka 4.2+ cluster is (share.version finalized), told it is the newest 4.x served here;
# librdkafka's test clusters for 4.2+ (tests/cluster_testing.py, run-all-tests.sh) lower
# group.share.min.record.lock.duration.ms to 1000, so tests can set 3 s locks per group.
SHARE_TESTS = "0170,0171,0172,0173,0174,0175,0176,0177,0178,0179,0180,0181,0184,0185"
SHARE_OVERRIDES = {
    **BROKER_OVERRIDES,
    "minikafka.share.version": "1",
    "group.share.min.record.lock.duration.ms": "1000",
}
SHARE_KAFKA_VERSION = "4.4.0"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="2.15.1", choices=sorted(SOURCES))
    parser.add_argument("--tests", help="TESTS for the runner: numbers, comma-separated")
    parser.add_argument(
        "--parallel", type=int, default=PARALLEL, help="tests the runner runs at once (-pN)"
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help=f"the tests that need 3 brokers ({CLUSTER_TESTS}) against a 3-node cluster",
    )
    parser.add_argument(
        "--share", action="store_true", help=f"the share-consumer tests ({SHARE_TESTS})"
    )
    parser.add_argument("--full", action="store_true", help="the runner's full mode (no -Q)")
    args = parser.parse_args(argv)
    source = SOURCES[args.version]
    suite = f"librdkafka-{source.version}" + ("-cluster" if args.cluster else "")
    overrides = CLUSTER_OVERRIDES if args.cluster else BROKER_OVERRIDES
    tests = args.tests or (CLUSTER_TESTS if args.cluster else None)
    if args.share:
        suite, overrides = f"librdkafka-{source.version}-share", SHARE_OVERRIDES
        tests = args.tests or SHARE_TESTS

    started = time.monotonic()
    tests_dir = ensure_built(source)
    if args.cluster:
        ensure_jdk()
    built = time.monotonic()
    say(f"librdkafka {source.version}: ready in {built - started:.0f} s")

    run_dir = BUILD / f"run-{suite.removeprefix('librdkafka-')}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    # Full mode: 0098_consumer_txn's tests 0-4, which quick mode skips, took the cluster
    # run from about 40 s to about 4 minutes here.
    flags = [f for f in RUNNER_FLAGS if f != "-Q"] if args.full else RUNNER_FLAGS
    output = _run_suite(tests_dir, run_dir, overrides, flags, tests, args.parallel)
    say(f"{suite}: suite ran in {time.monotonic() - built:.0f} s")

    found = results.parse_summary(output)
    must_pass = results.read_must_pass(LISTS / f"{suite}.must-pass")
    excluded = results.read_excluded(LISTS / f"{suite}.excluded")
    selected = set(args.tests.split(",")) if args.tests else None
    verdict = results.judge(found, must_pass, excluded, selected)
    flaky: list[str] = []
    if verdict.must_pass_failed and len(verdict.must_pass_failed) <= MAX_RETRIED:
        # A must-pass test that failed is run again alone, up to RETRY_RUNS times (see
        # results.merge_retry); many failures at once are a regression, not timing, and are
        # not retried. A test that fails every time still fails the verdict.
        for attempt in range(1, RETRY_RUNS + 1):
            names = verdict.must_pass_failed
            say(f"librdkafka {source.version}: running alone again: {', '.join(names)}")
            retry_dir = run_dir / ("retry" if attempt == 1 else f"retry-{attempt}")
            retry_dir.mkdir()
            again = ",".join(sorted({n[:4] for n in names}))
            retried = _run_suite(tests_dir, retry_dir, overrides, flags, again, 1)
            found, passed = results.merge_retry(found, results.parse_summary(retried), names)
            flaky += passed
            verdict = results.judge(found, must_pass, excluded, selected)
            if not verdict.must_pass_failed:
                break
    _report(suite, found, verdict, excluded, run_dir)
    for name in flaky:
        print(f"FLAKY (failed in the run, passed alone): {name}")
    return 0 if verdict.ok else 1


def _run_suite(
    tests_dir: Path,
    run_dir: Path,
    overrides: dict[str, str],
    flags: list[str],
    tests: str | None,
    parallel: int,
) -> str:
    broker = BrokerProcess(run_dir / "data", overrides).start()
    try:
        # Every node of a simulated cluster, node k on the first node's port + k.
        size = int(overrides.get("minikafka.cluster.size", "1"))
        bootstrap = ",".join(f"127.0.0.1:{broker.port + k}" for k in range(size))
        conf = run_dir / "test.conf"
        conf.write_text(
            f"bootstrap.servers={bootstrap}\n"
            # As trivup's LibrdkafkaTestApp writes it for every broker run.
            "test.timeout.multiplier=2\n"
        )
        env = {
            **os.environ,
            "RDKAFKA_TEST_CONF": str(conf),
            "TEST_KAFKA_VERSION": (
                SHARE_KAFKA_VERSION if overrides.get("minikafka.share.version") else KAFKA_VERSION
            ),
            "TEST_SCENARIO": "default",
            "TEST_REPORT": str(run_dir / "report.json"),
            # test_kafka_topics() runs $KAFKA_PATH/bin/kafka-topics.sh --bootstrap-server
            # $BROKERS, and 0109/0115/0119 kafka-acls.sh: Kafka's own tools, the version the
            # suite is told about (tests/support/kafka_reference.py: bin/*.sh run their
            # classes from Maven's jars).
            "KAFKA_PATH": str(install_scripts(KAFKA_VERSION)),
            "BROKERS": bootstrap,
            # librdkafka's suite runs in its "CI" mode everywhere, so a developer's machine and
            # CI (which sets CI=true) get the same verdict: in that mode timing asserts only
            # warn, timeouts are stretched and 0055_producer_latency skips itself ("Latency
            # measurements not reliable on CI"), as librdkafka's own CI runs it.
            "CI": "true",
        }
        if tests:
            env["TESTS"] = tests
        say(f"running librdkafka's suite against {bootstrap} (log: {run_dir})")
        log_path = run_dir / "suite.log"
        try:
            done = subprocess.run(
                # Line-buffered stdout: a runner that aborts after its summary (test.c
                # asserts when librdkafka threads outlive a failed test) would otherwise
                # lose the table still in its stdio buffer.
                ["stdbuf", "-oL", "./run-test.sh", f"-p{parallel}", *flags, "bare"],
                cwd=tests_dir,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=RUN_TIMEOUT_S,
            )
            output = done.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as expired:
            raw = expired.stdout or b""
            output = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            output += f"\n[peer-tests] runner stopped after {RUN_TIMEOUT_S} s\n"
        log_path.write_text(output)
    finally:
        broker.stop()
        (run_dir / "broker.log").write_text(broker.log_text())
    return output


def _report(
    suite: str,
    found: dict[str, results.TestResult],
    verdict: results.Verdict,
    excluded: dict[str, str],
    run_dir: Path,
) -> None:
    for name, result in sorted(found.items()):
        note = ""
        if result.state == "FAILED":
            note = f"excluded: {excluded[name]}" if name in excluded else result.reason
        elif result.state == "SKIPPED":
            note = result.reason
        print(f"  {name:<48} {result.state:<8} {note}"[:160])
    for name in verdict.must_pass_failed:
        print(f"MUST-PASS FAILED: {name}")
    for name in verdict.unlisted_failed:
        print(f"FAILED and on no list (fix it, or exclude it with the reason): {name}")
    for name in verdict.newly_passing:
        print(f"passes but is not on the must-pass list, add it there: {name}")
    for error in verdict.list_errors:
        print(f"LIST ERROR: {error}")
    counts = verdict.counts
    say(f"logs: {run_dir}")
    # The plain closing line CI reads.
    print(
        f"{suite}: {counts['PASSED']} passed, {counts['FAILED']} failed, "
        f"{counts['SKIPPED']} skipped"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
