"""Long-polling fetches are parked per partition (Kafka's delayed-fetch purgatory keyed by
TopicPartitionOperationKey): an append wakes only the fetches reading that partition."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.config.loader import make_config
from broker.core.request_context import RequestContext
from broker.core.state import BrokerState
from broker.fetch.purgatory import FetchPurgatory
from broker.fetch.zero_copy import FileRecords
from broker.handlers import build_dispatcher, fetch, produce
from protocol import codec
from protocol.header import RequestHeader
from protocol.messages.fetch import FETCH
from protocol.messages.produce import PRODUCE
from protocol.records import build_batch
from protocol.schema import Api, Message
from storage.partition_log import PartitionLog
from storage.producer_ids import ProducerIdAllocator
from storage.store import Store
from tests.support.produce import fetch_request, produce_request, stored


async def settle() -> None:
    """Let every callback already scheduled run (loop turns, not time)."""
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_an_append_wakes_only_the_watchers_of_its_partition() -> None:
    purgatory = FetchPurgatory()
    on_zero = purgatory.watch([("t", 0)])
    on_one = purgatory.watch([("t", 1), ("u", 0)])
    assert purgatory.check_and_complete(("t", 0)) == 1
    assert on_zero.woken and not on_one.woken
    assert purgatory.check_and_complete(("u", 0)) == 1
    assert on_one.woken


@pytest.mark.asyncio
async def test_a_cancelled_watch_leaves_no_key_behind() -> None:
    purgatory = FetchPurgatory()
    watch = purgatory.watch([("t", 0), ("t", 1), ("t", 0)])
    assert purgatory.watched() == 2
    watch.cancel()
    assert purgatory.watched() == 0
    assert purgatory.check_and_complete(("t", 0)) == 0


@pytest.mark.asyncio
async def test_wait_times_out_without_an_append_and_complete_all_wakes_everyone() -> None:
    purgatory = FetchPurgatory()
    watch = purgatory.watch([("t", 0)])
    assert await watch.wait(0.01) is False
    other = purgatory.watch([("t", 5)])
    purgatory.complete_all()
    assert await other.wait(10) is True


@pytest.fixture
def state(tmp_path: Path) -> Iterator[BrokerState]:
    config = make_config({"log.dirs": str(tmp_path / "data")})
    store = Store.open(config.log_dir, node_id=1)
    state = BrokerState(config, store, ProducerIdAllocator(config.log_dir), build_dispatcher())
    store.create_topic("t", 2)
    yield state
    store.close()


def to(partition: int, data: bytes) -> Message:
    return produce_request("t", data, partition=partition)


def wire(api: Api, version: int, body: Message) -> Message:
    """The request as the handler gets it: encoded, then decoded with every default."""
    return codec.decode_request(api, version, codec.encode_request(api, version, body))


def context(state: BrokerState, api_version: int) -> RequestContext:
    header = RequestHeader(0, api_version, 1, "test")
    return RequestContext(header, state.config.listeners[0], "test:1", state)


@pytest.mark.asyncio
async def test_a_produce_to_another_partition_does_not_reread_a_parked_fetch(
    state: BrokerState, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: dict[int, int] = {0: 0, 1: 0}
    original = PartitionLog.read_slice

    def counting(self: PartitionLog, *args: object, **kw: object) -> object:
        reads[self.partition] += 1
        return original(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(PartitionLog, "read_slice", counting)
    request = wire(FETCH, 12, fetch_request("t", 0, max_wait_ms=30_000, partition=1))
    parked = asyncio.create_task(fetch.handle(context(state, 12), request))
    await settle()
    assert not parked.done()
    reads_when_parked = reads[1]

    for _ in range(5):
        data = build_batch([(None, b"elsewhere")])
        await produce.handle(context(state, 9), wire(PRODUCE, 9, to(0, data)))
        await settle()
    assert not parked.done()
    assert reads[1] == reads_when_parked, "a produce to partition 0 re-read partition 1"

    data = build_batch([(None, b"mine")])
    await produce.handle(context(state, 9), wire(PRODUCE, 9, to(1, data)))
    answer = await asyncio.wait_for(parked, 10)
    part = answer.responses[0].partitions[0]
    records = part.records.read() if isinstance(part.records, FileRecords) else part.records
    on_disk = stored(Path(state.config.log_dir), "t", 1)
    assert [bytes(records)] == [raw for _, raw in on_disk]
    assert part.high_watermark == 1
    assert state.fetch_purgatory.watched() == 0
