"""Fetch, versions 4-17 (Kafka 4.0's range).

In a simulated cluster (broker.cluster) a consumer's Fetch is served by the partition's
leader and, from v11 (KIP-392: FetchParams.fetchOnlyLeader once the client sends its
metadata), by a follower in the ISR; elsewhere NOT_LEADER_OR_FOLLOWER, with CurrentLeader
(v12+) and the leader's NodeEndpoints (v16+, KIP-951). Epochs below are the partition's
current leader epoch there (an older current_leader_epoch is FENCED_LEADER_EPOCH). With
replica.selector.class=RackAwareReplicaSelector the leader answers a consumer whose rack_id
names another replica's rack with that replica as preferred_read_replica and no records.

Serves stored batches exactly as they sit in the segment files, sent from the file with
sendfile when large (broker.fetch.zero_copy). Behaviour as Kafka (KafkaApis.handleFetchRequest,
ReplicaManager.fetchMessages / readFromLog, UnifiedLog.read, LogSegment.read):
- incremental fetch sessions (KIP-227, broker.fetch.sessions): epoch 0 opens a session,
  later epochs send only changes and get only partitions with news; session_id 0 with epoch
  -1, and every request below v7, is a sessionless full fetch;
- partitions are read in request (or session) order; unknown topics and partitions are
  answered after them (UNKNOWN_TOPIC_OR_PARTITION; v13+ unknown topic ids UNKNOWN_TOPIC_ID),
  with aborted_transactions [] as FetchResponse.partitionResponse sets it;
- byte limits (KIP-74): the request's max_bytes is shared by the partitions in order; the
  first partition that returns data gets at least one whole batch even above max_bytes /
  partition_max_bytes (minOneMessage); after it, a partition whose first batch does not fit
  its remaining budget returns nothing. Data may end inside a batch (LogSegment.read does not
  align to batches; clients drop the partial tail). Every partition is range-checked, even
  one with no budget left;
- a read that fails (OFFSET_OUT_OF_RANGE, UNKNOWN_LEADER_EPOCH for a current_leader_epoch
  above this broker's 0; negative means "not given") answers high watermark, last stable
  offset and log start offset -1 and null aborted_transactions (createLogReadResult);
- read_committed (isolation 1) reads whole batches below the last stable offset only
  (LocalLog.read with maxOffsetMetadata = LSO); an offset in [LSO, LEO] reads nothing, with
  no error. last_stable_offset is answered at both levels;
- aborted_transactions: null for read_uncommitted, and for read_committed where the first
  batch did not fit; for read_committed otherwise every aborted transaction whose ABORT
  marker is at or after the fetch offset and whose first offset is below the read's upper
  bound (LocalLog.addAbortedTransactions: the first offset-index entry at or after the
  read's end, else the next segment's base, else the log end), as (producer id, first
  offset) in marker order;
- last_fetched_epoch (v12+, KIP-320): an epoch above 0 is OFFSET_OUT_OF_RANGE; epoch 0 with a
  fetch offset past the log end answers diverging_epoch (0, log end), as
  Partition.readRecords does;
- long-poll: with fewer than min_bytes readable (counted over all its partitions) the answer
  waits up to max_wait_ms, parked per partition (broker.fetch.purgatory, Kafka's DelayedFetch
  purgatory): only an append to one of its partitions wakes it to read again, a topic
  deletion or shutdown answers it; it is sent at once when a read failed or an epoch
  diverged.
Deviation: a negative partition_max_bytes (or request max_bytes) that reaches a read gets
INVALID_FETCH_SIZE; Kafka's LogSegment.read throws an IllegalArgumentException there, which
clients see as UNKNOWN_SERVER_ERROR.
Authorization (with an authorizer): READ on each topic, else TOPIC_AUTHORIZATION_FAILED,
answered without a read like unknown partitions (KafkaApis.handleFetchRequest).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from broker.cluster.state import Cluster
from broker.core.request_context import RequestContext
from broker.fetch.purgatory import Watch
from broker.fetch.sessions import ZERO_UUID, Answered, PartitionKey, PartitionRef, PartitionRequest
from broker.fetch.zero_copy import FileRecords
from broker.handlers._leadership import (
    current_leader,
    epoch_end,
    node_endpoints,
    served_here,
    topic_id_of,
    with_field,
)
from broker.handlers.list_offsets import LEADER_EPOCH
from broker.security.acl import READ, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.fetch import FETCH
from protocol.records import CorruptBatchError
from protocol.schema import Message
from storage.partition_log import OffsetOutOfRangeError, PartitionLog
from storage.store import Store, TopicInfo

API = FETCH
MIN_VERSION = 4
MAX_VERSION = 17

READ_COMMITTED = 1
FIRST_TOPIC_ID_VERSION = 13
# Kafka keeps v5 and older clients retrying on a storage error
# (KafkaApis.maybeDownConvertStorageError).
LAST_VERSION_WITHOUT_STORAGE_ERROR = 5

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: Message) -> Message:
    state = ctx.state
    store = state.store
    by_id: dict[bytes, TopicInfo] = (
        {t.topic_id: t for t in store.topics()} if ctx.version >= FIRST_TOPIC_ID_VERSION else {}
    )

    def resolve_name(topic_id: bytes) -> str | None:
        info = by_id.get(topic_id)
        return info.name if info is not None else None

    context = state.fetch_sessions.new_context(
        ctx.version,
        request.session_id,
        request.session_epoch,
        _requested(ctx.version, request, resolve_name),
        _forgotten(ctx.version, request, resolve_name),
        resolve_name,
        int(time.monotonic() * 1000),
    )
    # KafkaApis: partitions of unknown topics are answered without a read, after the others.
    interesting: list[tuple[PartitionRef, PartitionRequest]] = []
    erroneous: Answered = []
    for ref, wanted in context.partitions():
        if ref.topic is None:
            erroneous.append((ref, _not_read(ref.index, ErrorCode.UNKNOWN_TOPIC_ID)))
        elif not ctx.authorized(READ, TOPIC, ref.topic):
            erroneous.append((ref, _not_read(ref.index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
        elif store.partition(ref.topic, ref.index) is None:
            erroneous.append((ref, _not_read(ref.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)))
        else:
            interesting.append((ref, wanted))

    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000

    def answerable(readable: int, at_once: bool) -> bool:
        return (
            not interesting
            or readable >= request.min_bytes
            or at_once
            or deadline <= time.monotonic()
            or state.shutting_down
        )

    read, readable, at_once = _read_all(ctx, interesting, request)
    # Parked under each partition it reads (DelayedFetch watched per
    # TopicPartitionOperationKey): only an append to one of those wakes it.
    keys = [(ref.topic, ref.index) for ref, _ in interesting if ref.topic is not None]
    watch: Watch | None = None
    try:
        while not answerable(readable, at_once):
            if watch is not None:
                watch.cancel()
            watch = state.fetch_purgatory.watch(keys)
            # Read again once watched, so an append just before the watch is not missed.
            read, readable, at_once = _read_all(ctx, interesting, request)
            if answerable(readable, at_once):
                break
            if not await watch.wait(deadline - time.monotonic()):
                read, _, _ = _read_all(ctx, interesting, request)
                break
    finally:
        if watch is not None:
            watch.cancel()

    outcome = context.respond(read + erroneous)
    metrics = state.metrics
    for ref, answer in outcome.partitions:
        if answer.records and ref.topic is not None:
            metrics.sent(ref.topic, len(answer.records))
    response = Message(
        throttle_time_ms=0,
        error_code=outcome.error,
        session_id=outcome.session_id,
        responses=_by_topic(outcome.partitions),
    )
    if state.cluster is not None and ctx.version >= 16:
        # KIP-951: the addresses of the leaders named in CurrentLeader.
        leaders = {
            a.current_leader.leader_id
            for _, a in outcome.partitions
            if a.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        }
        if leaders:
            with_field(response, "node_endpoints", node_endpoints(ctx, state.cluster, leaders))
    return response


def _requested(
    version: int, request: Message, resolve_name: Callable[[bytes], str | None]
) -> dict[PartitionKey, tuple[PartitionRef, PartitionRequest]]:
    """FetchRequest.fetchData: one entry per partition; a partition listed twice keeps its
    first place and its last parameters (Kafka's LinkedHashMap)."""
    wanted: dict[PartitionKey, tuple[PartitionRef, PartitionRequest]] = {}
    for topic in request.topics:
        for part in topic.partitions:
            ref = _ref(version, topic, part.partition, resolve_name)
            wanted[ref.key] = (
                ref,
                PartitionRequest(
                    fetch_offset=part.fetch_offset,
                    max_bytes=part.partition_max_bytes,
                    current_leader_epoch=part.current_leader_epoch,
                    log_start_offset=part.log_start_offset,
                    last_fetched_epoch=part.last_fetched_epoch,
                ),
            )
    return wanted


def _forgotten(
    version: int, request: Message, resolve_name: Callable[[bytes], str | None]
) -> list[PartitionRef]:
    return [
        _ref(version, topic, index, resolve_name)
        for topic in request.forgotten_topics_data
        for index in topic.partitions
    ]


def _ref(
    version: int, topic: Message, index: int, resolve_name: Callable[[bytes], str | None]
) -> PartitionRef:
    if version >= FIRST_TOPIC_ID_VERSION:
        return PartitionRef(topic.topic_id, resolve_name(topic.topic_id), index)
    return PartitionRef(ZERO_UUID, topic.topic, index)


def _read_all(
    ctx: RequestContext, wanted: list[tuple[PartitionRef, PartitionRequest]], request: Message
) -> tuple[Answered, int, bool]:
    """ReplicaManager.readFromLog: (answers, bytes readable, whether to answer at once)."""
    limit = request.max_bytes
    min_one_message = True
    read_committed = request.isolation_level == READ_COMMITTED
    answers: Answered = []
    readable = 0
    at_once = False
    # KIP-392: a consumer's rack (Fetch v11+), for the replica selector.
    rack = request.get("rack_id") or ""
    for ref, part in wanted:
        answer = _read(ctx, ref, part, limit, min_one_message, read_committed, rack)
        size = len(answer.records)
        if size > 0:
            # Once a partition returned data, the limits hold for the partitions after it.
            min_one_message = False
        limit = max(0, limit - size)
        readable += size
        if (
            answer.error_code != ErrorCode.NONE
            or answer.get("diverging_epoch") is not None
            or answer.preferred_read_replica >= 0
        ):
            at_once = True
        answers.append((ref, answer))
    return answers, readable, at_once


def _read(
    ctx: RequestContext,
    ref: PartitionRef,
    part: PartitionRequest,
    limit: int,
    min_one_message: bool,
    read_committed: bool,
    rack: str = "",
) -> Message:
    plog, error = _log_for(ctx.state.store, ref)
    if plog is None:
        return _failed(ref.index, error)
    epoch = LEADER_EPOCH
    # A simulated cluster's node serves up to its high watermark (FetchIsolation's
    # HIGH_WATERMARK for consumers); None: the log's own (a single broker's is its end).
    high_watermark: int | None = None
    cluster = ctx.state.cluster
    if cluster is not None:
        served = served_here(ctx, cluster, plog.topic, ref.index, replica_ok=ctx.version >= 11)
        if served is None:
            leader = current_leader(cluster, topic_id_of(ctx, plog.topic), ref.index)
            return with_field(
                _failed(ref.index, ErrorCode.NOT_LEADER_OR_FOLLOWER), "current_leader", leader
            )
        epoch = served
        replication = ctx.state.replication
        assert replication is not None
        high_watermark = replication.high_watermark_on(
            cluster.node_of(ctx.listener),
            cluster.partition(topic_id_of(ctx, plog.topic), ref.index),
            plog,
        )
        # Partition.checkCurrentLeaderEpoch: an older epoch than the leader's is fenced.
        if 0 <= part.current_leader_epoch < epoch:
            return _failed(ref.index, ErrorCode.FENCED_LEADER_EPOCH)
    if part.current_leader_epoch > epoch:
        return _failed(ref.index, ErrorCode.UNKNOWN_LEADER_EPOCH)
    if cluster is not None and rack:
        closer = preferred_read_replica(ctx, cluster, plog, ref.index, part.fetch_offset, rack)
        if closer is not None:
            # ReplicaManager.readFromLog: no records, the replica to fetch from instead.
            return with_field(
                _answer(ref.index, plog, b"", None, high_watermark),
                "preferred_read_replica",
                closer,
            )
    if part.last_fetched_epoch >= 0:
        if part.last_fetched_epoch > epoch or part.fetch_offset < plog.log_start_offset:
            return _failed(ref.index, ErrorCode.OFFSET_OUT_OF_RANGE)
        if cluster is not None and part.last_fetched_epoch < epoch:
            # Partition.fetchRecords' lastFetchedEpoch check: the fetcher's log diverged
            # where that epoch ended on the leader's (a failover truncated it there).
            ended_in, ended_at = epoch_end(plog, part.last_fetched_epoch, epoch)
            if ended_at < part.fetch_offset or ended_in < part.last_fetched_epoch:
                return _answer(
                    ref.index,
                    plog,
                    b"",
                    None,
                    high_watermark,
                    diverging_epoch=Message(epoch=ended_in, end_offset=ended_at),
                )
        if part.fetch_offset > plog.log_end_offset:
            return _answer(
                ref.index,
                plog,
                b"",
                None,
                high_watermark,
                diverging_epoch=Message(epoch=epoch, end_offset=plog.log_end_offset),
            )
    max_bytes = min(part.max_bytes, limit)
    max_offset = plog.last_stable_offset if read_committed else None
    if high_watermark is not None:
        max_offset = high_watermark if max_offset is None else min(max_offset, high_watermark)
    try:
        # A negative size is refused only where a batch would be read, as LogSegment.read.
        where = plog.read_slice(
            part.fetch_offset,
            max(max_bytes, 0),
            min_one_message=min_one_message or max_bytes < 0,
            max_offset=max_offset,
        )
    except OffsetOutOfRangeError:
        return _failed(ref.index, ErrorCode.OFFSET_OUT_OF_RANGE)
    except CorruptBatchError:
        log.exception("%s: cannot read the batch at offset %d", plog, part.fetch_offset)
        return _failed(ref.index, ErrorCode.CORRUPT_MESSAGE)
    except OSError:
        log.exception("%s: storage error reading offset %d", plog, part.fetch_offset)
        storage_error = (
            ErrorCode.NOT_LEADER_OR_FOLLOWER
            if ctx.version <= LAST_VERSION_WITHOUT_STORAGE_ERROR
            else ErrorCode.KAFKA_STORAGE_ERROR
        )
        return _failed(ref.index, storage_error)
    if max_bytes < 0 and where.length > 0:
        return _failed(ref.index, ErrorCode.INVALID_FETCH_SIZE)
    if where.first_entry_incomplete:
        # ReplicaManager.readFromLog replaces the cut batch with an empty read that carries
        # no aborted-transactions list.
        return _answer(ref.index, plog, b"", None, high_watermark)
    records: bytes | FileRecords = FileRecords(where) if where.length else b""
    aborted = None
    if read_committed:
        # Nothing read (at or past the LSO): LocalLog's emptyFetchDataInfo, an empty list.
        found = (
            plog.aborted_transactions(part.fetch_offset, plog.fetch_upper_bound(where))
            if where.length
            else []
        )
        aborted = [Message(producer_id=a.producer_id, first_offset=a.first_offset) for a in found]
    return _answer(ref.index, plog, records, aborted, high_watermark)


def _log_for(store: Store, ref: PartitionRef) -> tuple[PartitionLog | None, ErrorCode]:
    assert ref.topic is not None
    info = store.topic(ref.topic)
    if info is None or not 0 <= ref.index < len(info.partitions):
        # Deleted while the request waited, or since a session cached it.
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if ref.topic_id not in (ZERO_UUID, info.topic_id):
        # Recreated under the same name since the session cached its id.
        return None, ErrorCode.INCONSISTENT_TOPIC_ID
    return info.partitions[ref.index], ErrorCode.NONE


# replica.selector.class that turns KIP-392 on (Kafka's default selects the leader always).
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def preferred_read_replica(
    ctx: RequestContext, cluster: Cluster, plog: PartitionLog, index: int, offset: int, rack: str
) -> int | None:
    """KIP-392 on the leader, with replica.selector.class=RackAwareReplicaSelector: a live
    replica in the consumer's rack that has ``offset`` (ReplicaManager
    .findPreferredReadReplica), the leader itself when it is one of them, else the most
    caught up (ReplicaView.comparator); None: read here."""
    selector = dict(ctx.state.config.explicit).get("replica.selector.class", "")
    if selector.strip() != RACK_AWARE_SELECTOR:
        return None
    node = cluster.node_of(ctx.listener)
    part = cluster.partition(topic_id_of(ctx, plog.topic), index)
    if node != part.leader or part.log is not plog:
        return None
    same_rack = [
        n
        for n in part.replicas
        if cluster.racks.get(n) == rack
        and n in cluster.alive
        and (n == node or plog.log_start_offset <= offset <= part.ends.get(n, -1))
    ]
    if not same_rack or node in same_rack:
        return None
    return max(same_rack, key=lambda n: (part.ends.get(n, -1), part.caught_up_ms.get(n, 0.0)))


def _answer(
    index: int,
    plog: PartitionLog,
    records: bytes | FileRecords,
    aborted: list[Message] | None,
    high_watermark: int | None = None,
    **extra: Message,
) -> Message:
    end = plog.high_watermark if high_watermark is None else high_watermark
    return Message(
        partition_index=index,
        error_code=ErrorCode.NONE,
        high_watermark=end,
        last_stable_offset=min(plog.last_stable_offset, end),
        log_start_offset=plog.log_start_offset,
        aborted_transactions=aborted,
        preferred_read_replica=-1,
        records=records,
        **extra,
    )


def _failed(index: int, error: ErrorCode) -> Message:
    """A read that failed (ReplicaManager.createLogReadResult)."""
    return _error_answer(index, error, None)


def _not_read(index: int, error: ErrorCode) -> Message:
    """A partition refused before any read (FetchResponse.partitionResponse)."""
    return _error_answer(index, error, [])


def _error_answer(index: int, error: ErrorCode, aborted: list[Message] | None) -> Message:
    return Message(
        partition_index=index,
        error_code=error,
        high_watermark=-1,
        last_stable_offset=-1,
        log_start_offset=-1,
        aborted_transactions=aborted,
        preferred_read_replica=-1,
        records=b"",
    )


def _by_topic(answered: Answered) -> list[Message]:
    """FetchResponse.toMessage: consecutive partitions of one topic share a topic entry."""
    topics: list[Message] = []
    last: tuple[str | None, bytes] | None = None
    for ref, answer in answered:
        if last == (ref.topic, ref.topic_id):
            topics[-1].partitions.append(answer)
            continue
        last = (ref.topic, ref.topic_id)
        topics.append(Message(topic=ref.topic or "", topic_id=ref.topic_id, partitions=[answer]))
    return topics
