"""One Apache Kafka (from its jars) and one minikafka process for the whole reference run.

Both are started once per session (Kafka's JVM takes 20-40 s to start here) and stopped at
the end, also when a test fails; every test uses its own topic, group and transactional id
names, so what one test leaves behind is the same on both sides.

Both run Kafka's StandardAuthorizer, so kafka-acls can add, list and remove ACLs; the tools
connect without authentication (User:ANONYMOUS), a super user on both sides, so the ACLs a
test adds deny the tools nothing (nor, on Kafka, the broker's own requests to its controller).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.kafka_reference import KafkaReference

# The Kafka the scenarios are compared with: the version minikafka implements, unless
# KAFKA_VERSION picks another of the fetched ones.
REFERENCE_VERSION = os.environ.get("KAFKA_VERSION", "4.0.0")

AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "true",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.reference)


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaReference]:
    ref = KafkaReference(REFERENCE_VERSION, overrides=AUTHORIZER)
    try:
        ref.start()
        print(f"\nApache Kafka {REFERENCE_VERSION} started in {ref.start_seconds:.1f}s")
        yield ref
    finally:
        ref.stop()


@pytest.fixture(scope="session")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("minikafka"), AUTHORIZER)
    try:
        proc.start()
        yield proc
    finally:
        if proc.proc is not None:
            proc.stop() if proc.is_running() else proc.kill()


@pytest.fixture(scope="session")
def sides(kafka: KafkaReference, ours: BrokerProcess) -> dict[str, str]:
    """Bootstrap address of each side, Kafka first."""
    return {"kafka": kafka.bootstrap, "ours": ours.bootstrap}
