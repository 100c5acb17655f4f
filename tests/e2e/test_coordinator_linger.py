"""group.coordinator.append.linger.ms: the group coordinator's writes wait for the linger
before they are written, as Kafka 4.0's CoordinatorRuntime batches them (default 5 ms), so
commits are answered no sooner than on Kafka; the loop serves everyone else meanwhile."""

from __future__ import annotations

import select
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.schema import Message
from tests.e2e.test_groups_raw import commit_request
from tests.support.broker_process import BrokerProcess, running
from tests.support.committed_offsets_log import read_log
from tests.support.produce import create_topic
from tests.support.raw_client import RawClient

LINGER_S = 3.0


@pytest.fixture
def lingering(tmp_path: Path) -> Iterator[BrokerProcess]:
    overrides = {"group.coordinator.append.linger.ms": str(int(LINGER_S * 1000))}
    with running(tmp_path / "data", overrides) as proc:
        yield proc


def test_commits_within_the_linger_are_answered_after_it_and_others_are_served_meanwhile(
    lingering: BrokerProcess,
) -> None:
    with (
        RawClient(lingering.port) as first,
        RawClient(lingering.port) as second,
        RawClient(lingering.port) as probe,
    ):
        create_topic(probe, "linger")
        sent = time.monotonic()
        first.send(OFFSET_COMMIT, 8, commit_request("linger-a", -1, "", "linger"))
        second.send(OFFSET_COMMIT, 8, commit_request("linger-b", -1, "", "linger"))
        # The broker answers other requests while the commits wait.
        assert probe.request(API_VERSIONS, 0, Message()).error_code == 0
        # ...and the commits were not answered before it (no bytes to read yet).
        readable, _, _ = select.select([first.sock, second.sock], [], [], 0)
        assert readable == []
        answers = [c.receive()[1].topics[0].partitions[0].error_code for c in (first, second)]
        # A floor, not a speed: the linger's timer never fires early.
        assert time.monotonic() - sent >= LINGER_S
    assert answers == [0, 0]
    on_disk = {(r.kind, r.group) for r in read_log(lingering.data_dir)}
    assert {("offset", "linger-a"), ("offset", "linger-b")} <= on_disk
