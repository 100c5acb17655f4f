"""`make peer-kafka-python`: kafka-python's own integration tests against a fresh minikafka.

1. Fetch kafka-python's sdist from PyPI with pip (pinned version, checked sha256) and
   unpack it once under build/peer/kafka-python/ (cached; `make clean` removes it).
2. Start a broker from this tree (tests/support/broker_process.py) configured as the suite
   configures Apache Kafka 4.0 (its servers/4.0.0/resources/kafka.properties), fresh data
   directory every run.
3. Run the suite's test/integration with pytest, KAFKA_VERSION=4.0.0 and
   KAFKA_URI=PLAINTEXT://127.0.0.1:<port> (its conftest then wraps our broker in an
   external fixture instead of spawning Kafka).
4. Print pass/fail/error/skip counts next to Apache Kafka 4.0's, and fail when a test of
   tests/peer/kafka-python.must-pass did not pass or a test is in neither list.

Run from the repository root: `python -m tests.peer.run_kafka_python [pytest args...]`
(extra args go to the suite's pytest, e.g. `-k test_group`; the verdict then only
judges what ran when `--only-selected` is given first).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from tests.peer.kafka_python_verdict import (
    judge,
    read_excluded,
    read_must_pass,
    report,
    summary_line,
)
from tests.support.broker_process import BrokerProcess

ROOT = Path(__file__).resolve().parents[2]
PEER_DIR = Path(__file__).resolve().parent
WORK = ROOT / "build" / "peer" / "kafka-python"

# The version whose suite the lists describe: the kafka-python our own tests pin (3.0.x).
VERSION = "3.0.12"
SDIST = f"kafka_python-{VERSION}.tar.gz"
SDIST_SHA256 = "4ccda3616b9aa5c353d74a97f2770d6cd1b950890d77ab0e8890e09a48eeed65"

# What the issue measured with this suite against Apache Kafka 4.0 (issue 12).
KAFKA_4_0_PASSED = 54

# The settings of the suite's own Kafka 4.0 template (servers/4.0.0/resources/
# kafka.properties in kafka-python's repository) that a single minikafka node has.
# Its tests rely on them: CreatePartitions assigns replicas to broker 0, test_group uses
# session_timeout_ms=3000 (Kafka's default group.min.session.timeout.ms is 6000), and
# DescribeConfigs must report advertised.listeners as STATIC_BROKER_CONFIG.
# Its ACL test needs StandardAuthorizer with allow.everyone.if.no.acl.found=true, as there.
SUITE_BROKER_CONFIG = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "node.id": "0",
    "listeners": "PLAINTEXT://127.0.0.1:0",
    "advertised.listeners": "PLAINTEXT://127.0.0.1:0",
    "num.partitions": "4",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "2",
    "offsets.commit.timeout.ms": "500",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "log.retention.hours": "168",
    "log.segment.bytes": "1073741824",
    "log.cleaner.enable": "false",
    "group.min.session.timeout.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
}

SUITE_TIMEOUT_S = 900
PER_TEST_TIMEOUT_S = 120


def log(message: str) -> None:
    print(f"[peer-kafka-python] {message}", flush=True)


def prepare_suite() -> Path:
    """The unpacked sdist with our two shims, downloaded and unpacked only once."""
    tree = WORK / f"kafka_python-{VERSION}"
    stamp = tree / ".minikafka-prepared"
    if stamp.exists():
        return tree
    archive = download_sdist()
    WORK.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="unpack-", dir=WORK))
    try:
        safe_extract(archive, staging)
        unpacked = staging / f"kafka_python-{VERSION}"
        add_shims(unpacked)
        (unpacked / ".minikafka-prepared").write_text(SDIST_SHA256 + "\n", encoding="utf-8")
        shutil.rmtree(tree, ignore_errors=True)
        unpacked.rename(tree)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return tree


def download_sdist() -> Path:
    downloads = WORK / "downloads"
    archive = downloads / SDIST
    if not archive.exists() or sha256(archive) != SDIST_SHA256:
        log(f"downloading the kafka-python {VERSION} sdist from PyPI")
        downloads.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                "--no-binary", ":all:", "--dest", str(downloads), f"kafka-python=={VERSION}",
            ],
            check=True,
        )  # fmt: skip
    digest = sha256(archive)
    if digest != SDIST_SHA256:
        raise SystemExit(f"{archive}: sha256 {digest}, expected {SDIST_SHA256}")
    return archive


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def safe_extract(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            target = (dest / member.name).resolve()
            if not target.is_relative_to(dest.resolve()) or member.issym() or member.islnk():
                raise SystemExit(f"{archive}: refusing member {member.name!r}")
        # Every member was checked above; Python >= 3.11.4 also applies its own "data" filter.
        extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(dest, **extra)


def add_shims(tree: Path) -> None:
    """What the sdist leaves out that test/integration imports.

    test/__init__.py: without it `test` resolves to CPython's own regression-test package
    and `from test.testutil import ...` fails. test/service.py: see the shim's docstring.
    """
    (tree / "test" / "__init__.py").touch()
    shutil.copyfile(PEER_DIR / "kafka_python_shims" / "service.py", tree / "test" / "service.py")


def run_suite(tree: Path, port: int, pytest_args: list[str]) -> dict[str, object]:
    outcomes_file = WORK / "outcomes.json"
    outcomes_file.unlink(missing_ok=True)
    kafka_root = WORK / "no-kafka-distribution"  # the fixture checks that this dir exists
    kafka_root.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "ZOOKEEPER_"))}
    env.update(
        KAFKA_VERSION="4.0.0",
        KAFKA_URI=f"PLAINTEXT://127.0.0.1:{port}",
        KAFKA_ROOT=str(kafka_root),
        MINIKAFKA_PEER_OUTCOMES=str(outcomes_file),
        PYTHONPATH=str(PEER_DIR),
        PYTHONDONTWRITEBYTECODE="1",
    )
    command = [
        sys.executable, "-m", "pytest", "test/integration", "-q", "-rfE",
        "-p", "no:cacheprovider", "-p", "no:asyncio", "-p", "kafka_python_outcomes",
        "-o", "log_level=WARNING", "--tb=short", "-W", "ignore::DeprecationWarning",
        f"--timeout={PER_TEST_TIMEOUT_S}",
        *pytest_args,
    ]  # fmt: skip
    log("running: " + " ".join(command[2:]))
    try:
        subprocess.run(command, cwd=tree, env=env, timeout=SUITE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"the suite did not finish within {SUITE_TIMEOUT_S} s") from None
    if not outcomes_file.exists():
        raise SystemExit("the suite wrote no outcomes (pytest did not get to run it)")
    result: dict[str, object] = json.loads(outcomes_file.read_text(encoding="utf-8"))
    return result


def main(argv: list[str]) -> int:
    only_selected = bool(argv) and argv[0] == "--only-selected"
    pytest_args = argv[1:] if only_selected else argv
    started = time.monotonic()
    tree = prepare_suite()
    WORK.mkdir(parents=True, exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix="broker-", dir=WORK))
    broker = BrokerProcess(data_dir / "data", overrides=SUITE_BROKER_CONFIG).start()
    log(f"minikafka started on port {broker.port}, data in {data_dir}")
    try:
        result = run_suite(tree, broker.port, pytest_args)
    finally:
        still_running = broker.is_running()
        exit_code = broker.stop() if still_running else None
        broker.kill()  # closes the log pipe; a no-op for a stopped process
        (WORK / "broker.log").write_text(broker.log_text(), encoding="utf-8")
        shutil.rmtree(data_dir, ignore_errors=True)
    outcomes = result["outcomes"]
    assert isinstance(outcomes, dict)
    must_pass = read_must_pass(PEER_DIR / "kafka-python.must-pass")
    excluded = read_excluded(PEER_DIR / "kafka-python.excluded")
    if only_selected:
        must_pass = [node_id for node_id in must_pass if node_id in outcomes]
    verdict = judge(outcomes, must_pass, excluded)
    elapsed = time.monotonic() - started
    log(f"kafka-python {VERSION} integration tests against minikafka:")
    log(f"  minikafka: {summary_line(verdict.counts)}")
    log(f"  against Apache Kafka 4.0 (issue 12): {KAFKA_4_0_PASSED} passed")
    log(f"  must-pass: {len(must_pass) - len(verdict.must_pass_not_passing)}/{len(must_pass)}")
    for line in report(verdict, excluded):
        log(line)
    broker_errors = broker_error_lines(broker.log_text())
    for line in broker_errors:
        log(f"BROKER LOGGED: {line}")
    log(f"broker log: {WORK / 'broker.log'}; {elapsed:.0f} s")
    if not still_running:
        log("the broker process had exited before the suite finished")
        return 1
    if exit_code != 0:
        log(f"the broker exited with status {exit_code} on SIGTERM")
        return 1
    return 0 if verdict.ok and not broker_errors else 1


def broker_error_lines(text: str) -> list[str]:
    """ERROR/CRITICAL lines and tracebacks: whatever a client does, the broker answers it
    (an error code or a closed connection with a WARNING naming why) and never crashes."""
    markers = (" ERROR ", " CRITICAL ", "Traceback (most recent call last)")
    return [line.rstrip() for line in text.splitlines() if any(m in line for m in markers)]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
