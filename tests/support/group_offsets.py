"""Committed offsets over raw sockets, for group and transaction tests: the topic part of an
OffsetCommit / TxnOffsetCommit request, and OffsetFetch v7 (one partition) and v8 (a whole
group) with their answers unpacked."""

from __future__ import annotations

from collections.abc import Mapping

from protocol.messages.offset_fetch import OFFSET_FETCH
from protocol.schema import Message
from tests.support.raw_client import RawClient


def committed_topic(name: str, offsets: Mapping[int, int], metadata: str | None = "") -> Message:
    """One topic of an OffsetCommit or TxnOffsetCommit request: partition -> offset to commit,
    no leader epoch (-1), the same metadata for each."""
    return Message(
        name=name,
        partitions=[
            Message(
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata=metadata,
            )
            for partition, offset in offsets.items()
        ],
    )


def offset_fetch_v7(client: RawClient, group: str, topic: str, require_stable: bool) -> Message:
    """OffsetFetch v7 of partition 0 of ``topic`` for ``group``: the whole answer."""
    return client.request(
        OFFSET_FETCH,
        7,
        Message(
            group_id=group,
            topics=[Message(name=topic, partition_indexes=[0])],
            require_stable=require_stable,
        ),
    )


def fetch_committed(
    client: RawClient, group: str, topic: str, require_stable: bool = True
) -> tuple[int, int]:
    """OffsetFetch v7 of partition 0 of ``topic``: (its error code, its committed offset)."""
    part = offset_fetch_v7(client, group, topic, require_stable).topics[0].partitions[0]
    return part.error_code, part.committed_offset


def committed_offsets(port: int, group: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> committed offset of every partition the group committed, from
    OffsetFetch v8 (all topics, not require_stable); the group's answer is checked error-free."""
    with RawClient(port) as client:
        answer = client.request(
            OFFSET_FETCH,
            8,
            Message(groups=[Message(group_id=group, topics=None)], require_stable=False),
        )
    (result,) = answer.groups
    assert result.error_code == 0, result
    return {
        (t.name, p.partition_index): p.committed_offset for t in result.topics for p in t.partitions
    }
