"""Topics and partitions made by CreateTopics and CreatePartitions survive a SIGKILL right
after the answer: every partition comes back, with its topic id, and takes records.

The disk work groups its fsyncs per request (storage.store.Store._make_partitions); these
check from the outside that nothing acknowledged is lost by that.
"""

from __future__ import annotations

from pathlib import Path

from protocol.messages.create_partitions import CREATE_PARTITIONS
from protocol.messages.metadata import METADATA
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_partitioned_topic, init_producer, produce
from tests.support.raw_client import RawClient

PARTITIONS = 40


def start(data: Path) -> BrokerProcess:
    return BrokerProcess(data, {"listeners": "PLAINTEXT://127.0.0.1:0"}).start()


def described(client: RawClient, names: list[str]) -> dict[str, tuple[bytes, int]]:
    """Each topic's id and partition count from Metadata."""
    answer = client.request(
        METADATA,
        12,
        Message(topics=[Message(name=n) for n in names], allow_auto_topic_creation=False),
    )
    return {
        t.name: (bytes(t.topic_id), len(t.partitions)) for t in answer.topics if t.error_code == 0
    }


def test_topics_created_and_grown_then_sigkilled_come_back_whole(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = start(data)
    with RawClient(broker.port) as client:
        ids = {name: create_partitioned_topic(client, name, PARTITIONS) for name in ("a", "b")}
        grown = client.request(
            CREATE_PARTITIONS,
            3,
            Message(
                topics=[Message(name="b", count=2 * PARTITIONS, assignments=None)],
                timeout_ms=10_000,
                validate_only=False,
            ),
        )
        assert grown.results[0].error_code == 0, grown
    broker.kill()  # straight after the answers: no clean shutdown, no later flush
    for name in ("a", "b"):
        count = PARTITIONS if name == "a" else 2 * PARTITIONS
        for index in range(count):
            assert (data / f"{name}-{index}" / "partition.metadata").exists()
        assert not list(data.glob(f"{name}-*/*.tmp"))
    broker = start(data)
    try:
        with RawClient(broker.port) as client:
            assert described(client, ["a", "b"]) == {
                "a": (ids["a"], PARTITIONS),
                "b": (ids["b"], 2 * PARTITIONS),
            }
            pid = init_producer(client)
            last = 2 * PARTITIONS - 1
            answer = produce(client, "b", batch(pid, 0, 0), partition=last)
            assert (answer.error_code, answer.base_offset) == (0, 0)
    finally:
        broker.stop()
