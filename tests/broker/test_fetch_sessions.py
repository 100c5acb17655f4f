"""The fetch session cache on its own: slots, shards and Kafka's eviction rules
(FetchSessionCacheShard.maybeCreateSession / tryEvict / touch)."""

from __future__ import annotations

from broker.fetch.sessions import (
    EVICTION_MS,
    INT32_MAX,
    NUM_SHARDS,
    CachedPartition,
    FetchSessionCache,
    PartitionRef,
    PartitionRequest,
    next_epoch,
)

NO_ID = b"\x00" * 16


def parts(n: int) -> list[CachedPartition]:
    request = PartitionRequest(
        fetch_offset=0, max_bytes=100, current_leader_epoch=-1, log_start_offset=-1
    )
    return [CachedPartition(PartitionRef(NO_ID, "t", i), request) for i in range(n)]


def test_next_epoch_counts_up_wraps_to_one_and_keeps_final() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(INT32_MAX) == 1
    assert next_epoch(-1) == -1


def test_a_full_shard_refuses_fresh_sessions_and_evicts_a_stale_one() -> None:
    cache = FetchSessionCache(2, shards=1)
    first = cache.create_session(0, parts(1), uses_topic_ids=False)
    second = cache.create_session(0, parts(1), uses_topic_ids=False)
    assert first and second and first != second
    # Both were created and used just now: neither stale nor evictable.
    assert cache.create_session(1_000, parts(50), uses_topic_ids=False) == 0
    used = cache.get(second)
    assert used is not None
    cache.touch(used, EVICTION_MS)
    # The first has not been used for longer than the eviction time: it makes room.
    third = cache.create_session(EVICTION_MS + 1, parts(1), uses_topic_ids=False)
    assert third
    assert cache.get(first) is None
    assert cache.get(second) is not None and cache.get(third) is not None


def test_an_old_session_gives_way_only_to_a_session_with_more_partitions() -> None:
    cache = FetchSessionCache(1, shards=1)
    old = cache.create_session(0, parts(3), uses_topic_ids=False)
    session = cache.get(old)
    assert session is not None
    # Touched when already older than the eviction time: evictable by any new session.
    cache.touch(session, EVICTION_MS + 10)
    now = EVICTION_MS + 11
    assert cache.create_session(now, parts(2), uses_topic_ids=False) == 0
    assert cache.create_session(now, parts(3), uses_topic_ids=False) == 0
    bigger = cache.create_session(now, parts(4), uses_topic_ids=False)
    assert bigger
    assert cache.get(old) is None


def test_a_session_younger_than_the_eviction_time_is_never_evicted_for_size() -> None:
    cache = FetchSessionCache(1, shards=1)
    young = cache.create_session(0, parts(1), uses_topic_ids=False)
    session = cache.get(young)
    assert session is not None
    cache.touch(session, EVICTION_MS - 1)
    assert cache.create_session(EVICTION_MS, parts(500), uses_topic_ids=False) == 0
    assert cache.get(young) is not None


def test_1000_slots_are_eight_shards_of_125_filled_in_turn() -> None:
    cache = FetchSessionCache(1000)
    id_range = INT32_MAX // NUM_SHARDS
    ids = [cache.create_session(0, parts(1), uses_topic_ids=False) for _ in range(1000)]
    assert all(ids)
    for i, session_id in enumerate(ids):
        shard = i % NUM_SHARDS
        assert max(1, shard * id_range) <= session_id < (shard + 1) * id_range
    assert cache.create_session(1, parts(1), uses_topic_ids=False) == 0
    assert len(cache) == 1000


def test_zero_slots_means_no_sessions() -> None:
    cache = FetchSessionCache(0)
    assert cache.create_session(0, parts(1), uses_topic_ids=False) == 0
