"""Streams groups (KIP-1071): one raw conversation against Apache Kafka 4.4.0 (streams groups
on by default there) and against minikafka with minikafka.streams.version=1, compared.

What is compared: ApiVersions' streams-group API versions and the streams.version feature,
StreamsGroupHeartbeat's request checks (errors and messages), a one-member group (statuses
while the internal topics are missing, the internal topic created with the subtopology's
task count, the tasks then assigned), a second member joining (nothing for it while the first
still owns every task, the split after the first gives its share up, the states described),
and leaving. Member ids are the test's own; epochs are compared as their order only.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.schema import Message
from tests.e2e.test_streams_groups_raw import (
    beat,
    describe,
    join,
    owned,
    partition_count,
    partitions,
    topology,
    versions,
)
from tests.support.broker_process import BrokerProcess, running
from tests.support.kafka_reference import KafkaReference
from tests.support.produce import create_partitioned_topic
from tests.support.raw_client import RawClient

# Errors a coordinator answers while it loads its partition: asked again.
LOADING = (14, 15, 16)
SETTINGS = {
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
}


@pytest.fixture(scope="module")
def kafka_44() -> Iterator[KafkaReference]:
    ref = KafkaReference("4.4.0", overrides=SETTINGS)
    ref.start()
    try:
        yield ref
    finally:
        ref.stop()


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = Path(tmp_path_factory.mktemp("streams-reference")) / "data"
    with running(data, {"minikafka.streams.version": "1", **SETTINGS}) as proc:
        yield proc


def _answer(m: Message) -> tuple[Any, ...]:
    return (
        m.error_code,
        m.error_message,
        m.heartbeat_interval_ms,
        m.task_offset_interval_ms,
        m.acceptable_recovery_lag,
        [(s.status_code, s.status_detail) for s in m.status or []],
        None if m.active_tasks is None else sorted(partitions(m)),
    )


def _joined(client: RawClient, group: str, member: str, top: Message) -> Message:
    deadline = time.monotonic() + 60
    while True:
        found = client.request(FIND_COORDINATOR, 6, Message(key_type=0, coordinator_keys=[group]))
        if all(c.error_code == 0 for c in found.coordinators):
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.3)
    while (answer := join(client, group, member, top)).error_code in LOADING:
        assert time.monotonic() < deadline, answer
        time.sleep(0.3)
    return answer


def conversation(port: int) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    with RawClient(port) as a:
        answer = versions(a)
        seen["versions"] = [
            (k.api_key, k.min_version, k.max_version)
            for k in answer.api_keys
            if k.api_key in (88, 89)
        ]
        seen["features"] = (
            [
                (f.name, f.min_version, f.max_version)
                for f in answer.supported_features
                if f.name == "streams.version"
            ],
            [
                (f.name, f.min_version_level)
                for f in answer.finalized_features
                if f.name == "streams.version"
            ],
        )
        create_partitioned_topic(a, "words", 4)
        top = topology(["words"], ["app-store-changelog"])
        first = _joined(a, "app", "m1", top)
        seen["join"] = _answer(first)
        for label, fields in (
            ("empty member", dict(member_id="")),
            ("no rebalance timeout", dict(group_id="app", member_id="m3")),
            ("unknown member", dict(group_id="app", member_id="zz", member_epoch=3)),
            ("missing group", dict(group_id="app-none", member_id="zz", member_epoch=3)),
            (
                "topology on a beat",
                dict(group_id="app", member_epoch=first.member_epoch, topology=top),
            ),
        ):
            answer = beat(a, **fields)
            seen[label] = (answer.error_code, answer.error_message, answer.member_id)
        epoch, tasks, steps = first.member_epoch, set(), []
        deadline = time.monotonic() + 30
        while tasks != {0, 1, 2, 3}:
            assert time.monotonic() < deadline, steps
            answer = owned(a, "app", "m1", epoch, tasks)
            steps.append(_answer(answer))
            epoch = answer.member_epoch
            if answer.active_tasks is not None:
                tasks = partitions(answer)
        seen["one member"] = steps[-1]
        # Kafka creates the internal topics after its answer; they exist once tasks came.
        seen["changelog partitions"] = partition_count(a, "app-store-changelog")
        steady = owned(a, "app", "m1", epoch, tasks)
        seen["steady"] = (_answer(steady), steady.member_epoch == epoch)
        second = join(a, "app", "m2", top)
        seen["second join"] = (_answer(second), second.member_epoch > epoch)
        shrink = owned(a, "app", "m1", epoch, tasks)
        kept = partitions(shrink)
        seen["first shrinks"] = (len(kept), shrink.member_epoch == epoch)
        done = owned(a, "app", "m1", epoch, kept)
        seen["first revoked"] = (_answer(done), done.member_epoch == second.member_epoch)
        given = owned(a, "app", "m2", second.member_epoch, set())
        seen["second given"] = (
            sorted(partitions(given)) == sorted({0, 1, 2, 3} - kept),
            given.member_epoch == second.member_epoch,
        )
        (group,) = describe(a, "app")
        seen["describe"] = (
            group.group_state,
            group.group_epoch == group.assignment_epoch == second.member_epoch,
            group.assignor_name,
            group.topology.epoch,
            [
                (s.subtopology_id, s.source_topics, [t.name for t in s.state_changelog_topics])
                for s in group.topology.subtopologies
            ],
            sorted(
                (
                    m.member_id,
                    m.process_id,
                    m.client_host,
                    len(m.assignment.active_tasks[0].partitions),
                )
                for m in group.members
            ),
        )
        (missing,) = describe(a, "app-none")
        seen["describe missing"] = (missing.error_code, missing.error_message)
        left = beat(a, group_id="app", member_id="m2", member_epoch=-1)
        seen["leave"] = (left.error_code, left.member_id, left.member_epoch)
    return seen


def test_streams_group_conversation_as_kafka_4_4(
    kafka_44: KafkaReference, ours: BrokerProcess
) -> None:
    theirs = conversation(kafka_44.port)
    mine = conversation(ours.port)
    assert mine == theirs
