"""Produce, versions 3-12 served, 0-12 advertised.

Kafka 4.0 still advertises v0-2 because librdkafka <= 2.11 disables features otherwise; a
v0-2 request closes the connection without an answer, as Kafka 4.0.0 does (KIP-896;
recorded in kafka-oracle/raw_produce_old_versions).

The request is handled as KafkaApis.handleProduceRequest does: each (topic, partition) is
first checked for existence and by ProduceRequest.validateRecords (storage.validation's
request-level checks); the batches that pass go into a map keyed by topic-partition, so a
partition named twice has only its LAST passing batch appended, and the answer has one
entry per partition, where an existence or request-level error wins over the append's
result (Kafka merges `responseStatus ++ nonExisting ++ invalidRequest`). Then, for the map
only (ReplicaManager.appendRecords): acks outside {-1, 0, 1} -> INVALID_REQUIRED_ACKS;
otherwise each batch is validated as UnifiedLog.append does (storage.validation),
LogValidator's per-record rules run (storage.record_rules: keys on compacted topics,
message.timestamp.before/after.max.ms, the LogAppendTime bit; INVALID_RECORD or
INVALID_TIMESTAMP with record_errors), max_timestamp and the timestamp type are written
back, a batch above segment.bytes gets RECORD_LIST_TOO_LARGE (Kafka's
RecordBatchTooLargeException), and PartitionLog.append runs the idempotence check, the
write and the producer-state update as one synchronous step (no await in between).

Error answers as ReplicaManager.appendToLocalLog builds them: error_message only with
record errors (the one exception Kafka marks hasCustomErrorMessage); log_start_offset -1
for request-level errors, UNKNOWN_TOPIC_OR_PARTITION, MESSAGE_TOO_LARGE,
RECORD_LIST_TOO_LARGE, CORRUPT_MESSAGE and KAFKA_STORAGE_ERROR, the partition's log start
offset for every other error. A partition of an internal topic (__consumer_offsets,
__transaction_state) gets INVALID_TOPIC_EXCEPTION with log_start_offset -1 unless the
client id is Kafka's admin client's (__admin_client). On a single broker
min.insync.replicas never refuses a write: Kafka caps it at the replication factor
(Partition.effectiveMinIsr, KAFKA-15583), which is 1.

In a simulated cluster (broker.cluster) only the partition's leader appends, checked at append
time as ReplicaManager.appendToLocalLog: elsewhere NOT_LEADER_OR_FOLLOWER with CurrentLeader
and, in the response, the leaders' NodeEndpoints (v10+, KIP-951); batches are stamped with the
partition's current leader epoch. acks=all is refused NOT_ENOUGH_REPLICAS before the append
when the ISR is below min.insync.replicas, and answered once the ISR has the batch
(broker.cluster.replication; REQUEST_TIMED_OUT after the request's timeout_ms).

acks=0: processed normally, no response; if any partition failed the connection is closed
so the client refreshes its metadata (Kafka's behaviour).

Transactional batches (KafkaApis / ReplicaManager / UnifiedLog, TRANSACTIONS.md §5): with
no transactional_id every partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED (see
Authorization below); batches of
two producer ids -> INVALID_PRODUCER_ID_MAPPING; a partition with no transaction open for
the batch's producer id and epoch is verified with the transaction coordinator first
(KIP-890 part 1, verify-only up to v11; v12 first adds the partition to the transaction,
KIP-890 part 2, retrying CONCURRENT_TRANSACTIONS for up to 100 ms): unknown producer id ->
INVALID_PRODUCER_ID_MAPPING, another epoch -> INVALID_PRODUCER_EPOCH (Kafka's
PRODUCER_FENCED mapping), Prepare states -> NOT_ENOUGH_REPLICAS (CONCURRENT_TRANSACTIONS
below v12), a partition not added -> TRANSACTION_ABORTABLE (INVALID_TXN_STATE up to v10).
The check and the append run with no await in between, which on one node replaces Kafka's
VerificationGuard.

Where the checks run (issues 13 and 19): they are pure functions of the batch bytes and
the topic's settings (storage.batch_checks), so they run wherever is cheapest. A request of
minikafka.validation.worker.min.records records or more (256 by default), a compressed
batch of 1 KiB or more, or 1 MiB or more goes to a validation worker process
(broker.produce.validation_pool: another core, no GIL); while no worker is ready, or with
minikafka.validation.workers=0, a request of 1 MiB, 512 records, a compressed batch of 1 KiB
or records carrying over 512 headers in all (found by the walk on the loop, which then
stops) goes to a worker thread (broker.runtime.offload), and smaller ones are checked on the loop:
a hop costs more than their checks (a 64 x 1 KiB batch takes about 130 us on the loop). A
worker that dies has its requests checked again in the broker: the answer is the one the
client would have had. Appends stay in arrival order per partition: each request takes its
turn on every partition it names before it waits for its checks, and appends only once
every earlier request's turn on that partition is over (Kafka keeps the order of appends
to one partition with the log's lock); a Produce pipelined on its connection
(broker.net.connection) first waits for the connection's previous request to finish. The
append itself (PartitionLog.append: idempotence check, offsets, write) stays one
synchronous step on the loop.

A request naming one partition, with no transactional id, acks -1 or 1, checked on the
loop and with no earlier request's turn open on the partition, takes a short path
(``_alone``, issue 19): the same helpers (_locate, the checks, _append, the flush) without
the maps, turns and merges, which cost about a fifth of a 1-record Produce's handling. Its
checks and append run with no await in between, so it needs no turn; anything else it
meets goes to the general path, which checks the batch again (the checks are pure).

Storage errors: once a write or fsync of a partition failed, it is offline (PartitionLog.
go_offline, Kafka's LogDirFailureChannel): every produce to it answers KAFKA_STORAGE_ERROR
until a restart, which recovers its log as after a crash (Kafka also needs a restart to
bring a failed log dir back). A failed fsync in the flush policy's wait answers the same.
Running out of file descriptors is not such a failure (storage.transient): the append or
roll that could not open a file answers the retriable REQUEST_TIMED_OUT with nothing
written, the partition stays online, and the producer's retry succeeds once a descriptor
is free (Kafka has no such case: its IOException takes the log dir offline).

Deviations: an offline partition keeps serving Fetch of what it stored (Kafka answers
KAFKA_STORAGE_ERROR there too; the bytes up to the last acknowledged batch are intact and
readable, so consumers carry on); only the partition goes offline, not the whole log dir
(the other partitions fail on their own first failed write);
the answer lists partitions in request order (Kafka's follows a hash map).
Authorization (with an authorizer): WRITE on each topic, else TOPIC_AUTHORIZATION_FAILED
before any other check of the partition (KafkaApis.handleProduceRequest). Before that and
every other check, a request whose first batch of some partition is transactional
(RequestUtils.hasTransactionalRecords; partitions denied or unknown count too) needs a
transactional id with WRITE on it, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
partition (acks=0: the connection is closed); a transactional id sent with only
non-transactional batches is not checked. A request without a transactional id pays no
extra work for this: the checked batches' headers are read, and raw bytes only where a
partition was answered early.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import TYPE_CHECKING

from broker.cluster.state import INTERNAL_TOPICS, Cluster, leadership_key
from broker.config.topic_configs import TopicSettings
from broker.core.dispatch import CloseConnection
from broker.core.request_context import RequestContext
from broker.handlers._leadership import (
    current_leader,
    misdirected,
    node_endpoints,
    with_field,
)
from broker.produce.validation_pool import ValidationPool, WorkerLost
from broker.runtime import offload
from broker.security.acl import TOPIC, TRANSACTIONAL_ID, WRITE
from protocol.errors import ErrorCode
from protocol.messages.produce import PRODUCE
from protocol.records import BatchHeader, LoopBudgetExceeded
from protocol.schema import Message
from storage.batch_checks import BatchJob, CheckedBatch, check_batch
from storage.partition_log import PartitionLog
from storage.record_rules import TopicRules

if TYPE_CHECKING:
    from broker.core.state import BrokerState

API = PRODUCE
MIN_VERSION = 3
MAX_VERSION = 12
ADVERTISED_MIN_VERSION = 0

# zstd needs Produce v7+ (KIP-110): older clients could not read it back.
ZSTD_MIN_VERSION = 7
# TRANSACTION_ABORTABLE reaches clients from v11 (KIP-890); v12 adds partitions implicitly.
LAST_VERSION_WITHOUT_ABORTABLE = 10
IMPLICIT_ADD_VERSION = 12

# ReplicaManager.appendToLocalLog answers these with LogAppendInfo.UNKNOWN_LOG_APPEND_INFO
# (log_start_offset -1); every other failure goes through processFailedRecord, which
# reports the partition's log start offset.
_NO_LOG_START_OFFSET = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)

log = logging.getLogger(__name__)
# KafkaApis.handleProduceRequest: requests with this client id may append to internal topics
# (AdminUtils.ADMIN_CLIENT_ID).
ADMIN_CLIENT_ID = "__admin_client"

_TopicPartition = tuple[str, int]


# One batch that passed the request-level checks (Kafka's authorizedRequestInfo), with what
# the checks decided.
_Entry = CheckedBatch


# A request runs its validation on a worker thread when its batches hold this many bytes
# (CRC and copies cost time per byte), this many records in all (the record walk costs a
# Python step per record, about 2 us), or a compressed batch of this many bytes (they can
# stand for 100x as many records). Below that the hop to a worker costs more than the
# work itself (issue 19: a 64 x 1 KiB batch validates in about 130 us on the loop).
OFFLOAD_BYTES = 1024 * 1024
OFFLOAD_RECORDS = 512
OFFLOAD_COMPRESSED_BYTES = 1024
# Records of one shape are read by a compiled pattern at about 0.2 us each
# (protocol.uniform_records): up to this many in a request are checked on the loop, and a
# batch that turns out not to be uniform still goes to a thread beyond OFFLOAD_RECORDS.
OFFLOAD_UNIFORM_RECORDS = 4096
# The headers a request may carry in all and still be validated on the loop: only the walk
# finds them, so one over the budget stops it and the request goes to a worker.
INLINE_MAX_HEADERS = 512
_LENGTH_AT = 8
_LOG_OVERHEAD = 12
_MAGIC_AT = 16
_ATTRIBUTES_LOW_BYTE = 22
_TRANSACTIONAL_BIT = 0x10
_RECORDS_COUNT_AT = 57
_INT32 = struct.Struct(">i")


def _partition(
    index: int,
    error: ErrorCode,
    *,
    log_start_offset: int = -1,
    record_errors: list[Message] | None = None,
    message: str | None = None,
) -> Message:
    return Message(
        index=index,
        error_code=error,
        base_offset=-1,
        log_append_time_ms=-1,
        log_start_offset=log_start_offset,
        record_errors=record_errors or [],
        error_message=message,
    )


async def handle(ctx: RequestContext, request: Message) -> Message | None:
    acks = request.acks
    if ctx.version < MIN_VERSION:
        # KIP-896: Kafka 4.0 closes the connection (kafka-oracle/raw_produce_old_versions).
        raise CloseConnection(f"Produce v{ctx.version} is not served (KIP-896: v3 and later)")
    now_ms = int(time.time() * 1000)
    topics = request.topic_data
    if (
        len(topics) == 1
        and len(topics[0].partition_data) == 1
        and request.transactional_id is None
        and (acks == -1 or acks == 1)
        and (ctx.after is None or ctx.after.done())
    ):
        alone = _alone(ctx, topics[0].name, topics[0].partition_data[0], now_ms, acks)
        if alone is not None:
            answer, appended, ends = alone
            if appended:
                due = _notify(ctx, appended)
                tp = (topics[0].name, answer.index)
                if due:
                    results = {tp: answer}
                    await _flush(ctx, due, {tp: appended[0]}, results)
                    answer = results[tp]
                if acks == -1 and ctx.state.replication is not None:
                    results = {tp: answer}
                    await _replicated(ctx, request.timeout_ms, {tp: appended[0]}, ends, results)
                    answer = results[tp]
            response = Message(
                responses=[Message(name=topics[0].name, partition_responses=[answer])],
                throttle_time_ms=0,
            )
            if ctx.state.cluster is not None:
                _add_node_endpoints(ctx, ctx.state.cluster, response)
            return response
    order: list[_TopicPartition] = []
    # Every (topic, partition) named, in request order, with its early answer or its work.
    named: list[tuple[_TopicPartition, Message | BatchJob]] = []
    logs: dict[_TopicPartition, PartitionLog] = {}
    seen: set[_TopicPartition] = set()
    for topic in request.topic_data:
        for part in topic.partition_data:
            tp = (topic.name, part.index)
            if tp not in seen:
                seen.add(tp)
                order.append(tp)
            named.append((tp, _locate(ctx, tp, part.records, now_ms, logs)))
    # The checks start now (in a worker process, or done at once on the loop): they are
    # pure, so a pipelined request checks its batches while earlier ones append.
    jobs = [w for _, w in named if isinstance(w, BatchJob)]
    checking = _start_checks(ctx, jobs)
    if ctx.after is not None and not ctx.after.done():
        # The connection's previous request appends first (broker.net.connection pipelining).
        try:
            await ctx.after
        except BaseException:
            _release(ctx, checking)
            raise
    # Turns are taken before the next await: appends keep the order requests arrived in.
    turns = {tp: _TURNS.take(plog) for tp, plog in logs.items()}
    try:
        return await _validate_and_append(
            ctx, request, acks, now_ms, order, named, logs, turns, jobs, checking
        )
    finally:
        for tp, (_, mine) in turns.items():
            _TURNS.release(logs[tp], mine)
        _release(ctx, checking)


async def _validate_and_append(
    ctx: RequestContext,
    request: Message,
    acks: int,
    now_ms: int,
    order: list[_TopicPartition],
    named: list[tuple[_TopicPartition, Message | BatchJob]],
    logs: dict[_TopicPartition, PartitionLog],
    turns: dict[_TopicPartition, tuple[asyncio.Future[None] | None, asyncio.Future[None]]],
    jobs: list[BatchJob],
    checking: list[CheckedBatch] | asyncio.Future[list[CheckedBatch]],
) -> Message | None:
    prepared = iter(await _finish_checks(ctx.state.validation_pool, jobs, checking))
    # KafkaApis' maps: a later batch for a partition replaces an earlier one, and an early
    # answer (unknown partition, request-level error) wins over the append's result.
    early: dict[_TopicPartition, Message] = {}
    entries: dict[_TopicPartition, _Entry] = {}
    for tp, item in named:
        if isinstance(item, Message):
            early[tp] = item
            continue
        entry = next(prepared)
        if entry.checked.request_level:
            _log_refused(ctx, tp, entry.checked.error, entry.checked.message)
            early[tp] = _partition(tp[1], entry.checked.error)
        else:
            entries[tp] = entry
    for previous, _ in turns.values():
        if previous is not None and not previous.done():
            await asyncio.shield(previous)

    results: dict[_TopicPartition, Message] = {}
    txn_id = request.transactional_id
    if _txn_refused(ctx, request, len(named), entries, txn_id):
        # KafkaApis.handleProduceRequest, before any other check: transactional records
        # need WRITE on the request's transactional id (none at all fails the same way),
        # else the whole request is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
        results = {
            tp: _partition(tp[1], ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for tp in order
        }
        early = {}
    elif acks not in (-1, 0, 1):
        log.warning("Produce with acks=%d refused (%s)", acks, ctx.describe())
        results = {tp: _partition(tp[1], ErrorCode.INVALID_REQUIRED_ACKS) for tp in entries}
    elif request.transactional_id is not None and (
        len({h.producer_id for h in _transactional(entries)}) > 1
    ):
        # ReplicaManager: one request carries one transactional producer.
        results = {tp: _partition(tp[1], ErrorCode.INVALID_PRODUCER_ID_MAPPING) for tp in entries}
    else:
        appended: list[PartitionLog] = []
        ends: dict[_TopicPartition, int] = {}
        refused: dict[_TopicPartition, ErrorCode] = {}
        if ctx.version >= IMPLICIT_ADD_VERSION and request.transactional_id is not None:
            refused = await _add_implicitly(ctx, request.transactional_id, entries, logs)
        for tp, entry in entries.items():
            if tp in refused:
                # Pre-append errors carry no log start offset (as verification's, below).
                results[tp] = _partition(tp[1], _verification_error(refused[tp], ctx.version))
                continue
            results[tp] = _append(
                ctx, tp, logs[tp], entry, now_ms, appended, request.transactional_id, acks, ends
            )
        for tp, (_, mine) in turns.items():
            _TURNS.release(logs[tp], mine)
        if appended:
            due = _notify(ctx, appended)
            if due:
                await _flush(ctx, due, logs, results)
            if acks == -1 and ctx.state.replication is not None:
                await _replicated(ctx, request.timeout_ms, logs, ends, results)

    # Kafka's merge: responseStatus ++ nonExistingTopicResponses ++ invalidRequestResponses.
    answers = {tp: early[tp] if tp in early else results[tp] for tp in order}
    if acks == 0:
        failed = [
            (name, index, ErrorCode(p.error_code).name)
            for (name, index), p in answers.items()
            if p.error_code != ErrorCode.NONE
        ]
        if failed:
            raise CloseConnection(f"acks=0 Produce failed for {failed}")
        return None
    grouped: dict[str, list[Message]] = {}
    for (name, _), answer in answers.items():
        grouped.setdefault(name, []).append(answer)
    responses = [Message(name=name, partition_responses=parts) for name, parts in grouped.items()]
    response = Message(responses=responses, throttle_time_ms=0)
    if ctx.state.cluster is not None:
        _add_node_endpoints(ctx, ctx.state.cluster, response)
    return response


async def _replicated(
    ctx: RequestContext,
    timeout_ms: int,
    logs: dict[_TopicPartition, PartitionLog],
    ends: dict[_TopicPartition, int],
    results: dict[_TopicPartition, Message],
) -> None:
    """acks=all in a simulated cluster (DelayedProduce): each appended partition answers
    once its ISR has the batch, REQUEST_TIMED_OUT after the request's timeout (the offsets
    of the append kept), NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
    min.insync.replicas meanwhile, NOT_LEADER_OR_FOLLOWER when the leader moved."""
    replication = ctx.state.replication
    assert replication is not None
    node = replication.cluster.node_of(ctx.listener)
    waits = {}
    for tp, required in ends.items():
        if results[tp].error_code != ErrorCode.NONE:
            continue
        info = ctx.state.store.topic(tp[0])
        if info is None:
            continue
        waits[tp] = replication.acknowledged(
            info.topic_id, tp[1], logs[tp], required, node, timeout_ms
        )
    if not waits:
        return
    verdicts = await asyncio.gather(*waits.values())
    for tp, verdict in zip(waits, verdicts, strict=True):
        if verdict != ErrorCode.NONE:
            with_field(results[tp], "error_code", verdict)
        if verdict == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            # KafkaApis names the current leader in every NOT_LEADER_OR_FOLLOWER (KIP-951).
            info = ctx.state.store.topic(tp[0])
            if info is not None:
                key = leadership_key(info.name, info.topic_id)
                leader = current_leader(replication.cluster, key, tp[1])
                with_field(results[tp], "current_leader", leader)


def _add_node_endpoints(ctx: RequestContext, cluster: Cluster, response: Message) -> None:
    """KIP-951 (v10+): the addresses of the leaders named in NOT_LEADER_OR_FOLLOWER answers'
    CurrentLeader, so the producer retries there without a Metadata round trip."""
    if ctx.version < 10:
        return
    leaders = {
        p.current_leader.leader_id
        for t in response.responses
        for p in t.partition_responses
        if p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    }
    if leaders:
        with_field(response, "node_endpoints", node_endpoints(ctx, cluster, leaders))


def _alone(
    ctx: RequestContext, name: str, part: Message, now_ms: int, acks: int
) -> tuple[Message, list[PartitionLog], dict[_TopicPartition, int]] | None:
    """The answer to a request naming one partition, and the log it appended to (if any),
    or None when the request needs handle's general path (issue 19: about a fifth of a
    1-record Produce's handling went to the maps, turns and merges of that path).

    The caller checked the rest: no transactional id, acks -1 or 1, no earlier request of
    the connection still running. Here the batch must also be checked on the loop, with no
    earlier request's turn open on the partition, and not be transactional (the general
    path answers that). Checks and append then run with no await in between, so no turn is
    needed: nothing else can append to the partition in the meantime. Answers are the ones
    the general path gives (the single-partition case of the same helpers); a request sent
    back to it is checked again there (the checks are pure).
    """
    tp = (name, part.index)
    logs: dict[_TopicPartition, PartitionLog] = {}
    item = _locate(ctx, tp, part.records, now_ms, logs)
    if isinstance(item, Message):
        # A transactional batch is refused before these errors (the general path answers).
        return None if _first_batch_transactional(part.records) else (item, [], {})
    plog = logs[tp]
    if _TURNS.taken(plog):
        return None
    jobs = [item]
    claimed = _claimed(jobs)
    state = ctx.state
    if _heavy(jobs, claimed) or _for_pool(state, jobs, claimed):
        return None
    checked = _check_on_loop(state.validation_pool, jobs)
    if checked is None:
        return None
    entry = checked[0]
    if entry.checked.request_level:
        if _first_batch_transactional(part.records):
            return None
        _log_refused(ctx, tp, entry.checked.error, entry.checked.message)
        return _partition(tp[1], entry.checked.error), [], {}
    header = entry.checked.header
    if header is not None and header.is_transactional:
        return None
    appended: list[PartitionLog] = []
    ends: dict[_TopicPartition, int] = {}
    answer = _append(ctx, tp, plog, entry, now_ms, appended, None, acks, ends)
    state.validation_pool.release(checked)
    return answer, appended, ends


def _notify(ctx: RequestContext, appended: list[PartitionLog]) -> list[PartitionLog]:
    """Wake the fetches waiting on these partitions; the ones the flush policy
    (flush.messages / flush.ms) wants fsynced before the answer."""
    ctx.state.notify_appended(appended)
    flush_ms = int(time.time() * 1000)
    return [plog for plog in appended if plog.needs_flush(flush_ms)]


async def _flush(
    ctx: RequestContext,
    due: list[PartitionLog],
    logs: dict[_TopicPartition, PartitionLog],
    results: dict[_TopicPartition, Message],
) -> None:
    """Answer only once the data is fsynced, as Kafka does when it flushes in the append
    path; rounds are shared. A partition whose fsync failed went offline: its answer in
    ``results`` becomes KafkaStorageException's. A flush that could not run for want of a
    file descriptor (storage.transient) leaves the partition online: where the flush
    policy asked for this batch on disk, its answer is the retriable REQUEST_TIMED_OUT
    (written but not durable, as a timed-out acks=all produce); a flush only of rolled
    segments, which Kafka does not wait for, answers as if it had not been waited for."""
    failed = False
    try:
        await ctx.state.flusher.flush(due)
    except OSError:
        failed = True
    now_ms = int(time.time() * 1000)
    for tp, plog in logs.items():
        if plog not in due or tp not in results:
            continue
        if plog.offline is not None:
            results[tp] = _failed(tp, ErrorCode.KAFKA_STORAGE_ERROR, plog)
        elif (
            failed
            and plog.recovery_point <= results[tp].base_offset
            and plog.flush_policy_due(now_ms)
        ):
            results[tp] = _failed(tp, ErrorCode.REQUEST_TIMED_OUT, plog)


class _Turns:
    """Per partition, the turn of the latest request that will append to it.

    A request waits for the turn taken before its own (``previous``) and ends its own
    (``mine``) once its append is done or abandoned; the last turn is forgotten when it ends.
    """

    def __init__(self) -> None:
        # A plain dict, not weak: every turn taken is released (handle's finally), and the
        # last one removes the entry (a WeakKeyDictionary cost a few us per request).
        self._last: dict[PartitionLog, asyncio.Future[None]] = {}

    def take(self, plog: PartitionLog) -> tuple[asyncio.Future[None] | None, asyncio.Future[None]]:
        previous = self._last.get(plog)
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last[plog] = mine
        return previous, mine

    def taken(self, plog: PartitionLog) -> bool:
        """Whether a request holds a turn on ``plog`` (it has yet to append, or give up)."""
        return plog in self._last

    def release(self, plog: PartitionLog, mine: asyncio.Future[None]) -> None:
        if not mine.done():
            mine.set_result(None)
        if self._last.get(plog) is mine:
            del self._last[plog]


_TURNS = _Turns()


def _locate(
    ctx: RequestContext,
    tp: _TopicPartition,
    records: memoryview | bytes | None,
    now_ms: int,
    logs: dict[_TopicPartition, PartitionLog],
) -> Message | BatchJob:
    """KafkaApis' first pass: metadataCache.contains (validateRecords follows in _start_checks)."""
    name, index = tp
    if not ctx.authorized(WRITE, TOPIC, name):
        # Before existence, as KafkaApis.handleProduceRequest (filterByAuthorized first).
        return _partition(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    state = ctx.state
    info = state.store.topic(name)
    plog = state.store.partition(name, index)
    if info is None or plog is None:
        return _partition(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if records is None:
        return _partition(index, ErrorCode.INVALID_RECORD)
    if name in INTERNAL_TOPICS and ctx.client_id != ADMIN_CLIENT_ID:
        # ReplicaManager.appendToLocalLog: only Kafka's own admin client may append to the
        # coordinators' topics (InvalidTopicException, no message in the answer).
        log.info("refused a produce to internal topic %s-%d (%s)", name, index, ctx.describe())
        return _partition(index, ErrorCode.INVALID_TOPIC_EXCEPTION)
    logs[tp] = plog
    settings = state.topic_settings(info)
    return BatchJob(
        records,
        settings.max_message_bytes,
        ctx.version >= ZSTD_MIN_VERSION,
        state.config.record_validation,
        _rules(tp, settings),
        now_ms,
    )


def _claimed(jobs: list[BatchJob]) -> tuple[int, int, bool]:
    """Bytes, claimed records and whether a compressed batch of OFFLOAD_COMPRESSED_BYTES or
    more is among ``jobs``, judged from the headers (a lie costs a walk no more: it stops
    at the data's end)."""
    total = 0
    records = 0
    compressed = False
    for job in jobs:
        data = job.records
        size = len(data)
        total += size
        if size > _RECORDS_COUNT_AT + 4:
            if data[_ATTRIBUTES_LOW_BYTE] & 0x07 and size >= OFFLOAD_COMPRESSED_BYTES:
                compressed = True
            records += max(0, _INT32.unpack_from(data, _RECORDS_COUNT_AT)[0])
    return total, records, compressed


def _heavy(jobs: list[BatchJob], claimed: tuple[int, int, bool] | None = None) -> bool:
    """Whether checking ``jobs`` may hold the loop for long (then a worker thread does it
    when no worker process is ready). ``claimed``: _claimed(jobs), when already known."""
    total, records, compressed = claimed or _claimed(jobs)
    return compressed or total >= OFFLOAD_BYTES or records >= OFFLOAD_UNIFORM_RECORDS


def _for_worker_process(
    jobs: list[BatchJob], min_records: int, claimed: tuple[int, int, bool] | None = None
) -> bool:
    """Whether ``jobs`` pay for the trip to a worker process (minikafka.validation.worker.
    min.records; compressed and mebibyte requests always do)."""
    total, records, compressed = claimed or _claimed(jobs)
    return compressed or total >= OFFLOAD_BYTES or records >= min_records


def _for_pool(state: BrokerState, jobs: list[BatchJob], claimed: tuple[int, int, bool]) -> bool:
    """Whether ``jobs`` go to a validation worker process when one is ready."""
    return state.validation_pool.enabled and _for_worker_process(
        jobs, state.config.validation_worker_min_records, claimed
    )


def _start_checks(
    ctx: RequestContext, jobs: list[BatchJob]
) -> list[CheckedBatch] | asyncio.Future[list[CheckedBatch]]:
    """The checks of ``jobs``: done on the loop when they are small, else a future (a
    validation worker process, or a worker thread when no worker process is ready)."""
    if not jobs:
        return []
    state = ctx.state
    pool = state.validation_pool
    claimed = _claimed(jobs)
    if _for_pool(state, jobs, claimed):
        future = pool.submit(jobs)
        if future is not None:
            ctx.offloaded = True
            return future
    on_loop = None if _heavy(jobs, claimed) else _check_on_loop(pool, jobs)
    if on_loop is not None:
        return on_loop
    return asyncio.ensure_future(_check_off_loop(pool, jobs))


async def _check_off_loop(pool: ValidationPool, jobs: list[BatchJob]) -> list[CheckedBatch]:
    """_check_all on a worker thread of the broker process."""
    return pool.count_walked_here(await offload.run(_check_all, jobs))


async def _finish_checks(
    pool: ValidationPool,
    jobs: list[BatchJob],
    checking: list[CheckedBatch] | asyncio.Future[list[CheckedBatch]],
) -> list[CheckedBatch]:
    if isinstance(checking, list):
        return checking
    try:
        return await checking
    except WorkerLost:
        # The checks are pure: run them again here (broker.produce.validation_pool replaces the
        # worker), so the client gets the answer it would have had.
        return await _check_off_loop(pool, jobs)


def _release(
    ctx: RequestContext, checking: list[CheckedBatch] | asyncio.Future[list[CheckedBatch]]
) -> None:
    """Give back the shared-memory slots of checked batches (broker.produce.validation_pool) once
    the request is done with them, or when its checks finish if it ended first."""
    release = ctx.state.validation_pool.release
    if isinstance(checking, list):
        release(checking)
    elif checking.done():
        if not checking.cancelled() and checking.exception() is None:
            release(checking.result())
    else:
        checking.add_done_callback(
            lambda f: None if f.cancelled() or f.exception() else release(f.result())
        )


def _check_all(jobs: list[BatchJob]) -> list[CheckedBatch]:
    return [check_batch(job) for job in jobs]


def _check_on_loop(pool: ValidationPool, jobs: list[BatchJob]) -> list[CheckedBatch] | None:
    """_check_all within INLINE_MAX_HEADERS record headers and fewer than OFFLOAD_RECORDS
    records walked one by one; None beyond (then the whole request is checked again on a
    worker: check_batch is pure, so nothing is left over)."""
    budget = [INLINE_MAX_HEADERS]
    walk = [OFFLOAD_RECORDS - 1]
    try:
        return pool.count_walked_here([check_batch(job, budget, walk) for job in jobs])
    except LoopBudgetExceeded:
        return None


def _log_refused(
    ctx: RequestContext, tp: _TopicPartition, error: ErrorCode, why: str | None
) -> None:
    log.warning(
        "rejected batch for %s-%d: %s %s (%s)", tp[0], tp[1], error.name, why or "", ctx.describe()
    )


def _failed(
    tp: _TopicPartition,
    error: ErrorCode,
    plog: PartitionLog,
    *,
    record_errors: list[Message] | None = None,
    message: str | None = None,
) -> Message:
    start = -1 if error in _NO_LOG_START_OFFSET else plog.log_start_offset
    return _partition(
        tp[1], error, log_start_offset=start, record_errors=record_errors, message=message
    )


def _append(
    ctx: RequestContext,
    tp: _TopicPartition,
    plog: PartitionLog,
    entry: _Entry,
    now_ms: int,
    appended: list[PartitionLog],
    transactional_id: str | None,
    acks: int,
    ends: dict[_TopicPartition, int],
) -> Message:
    """UnifiedLog.append for one batch that passed the request-level checks; ``ends``
    gets the offset the ISR must reach for an acks=all answer (its last offset + 1)."""
    state = ctx.state
    name, index = tp
    info = state.store.topic(name)
    if info is None or state.store.partition(name, index) is not plog:
        # Deleted (or deleted and created again) while the batch was being validated.
        return _partition(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    epoch = 0
    cluster = state.cluster
    if cluster is not None:
        # ReplicaManager.appendToLocalLog: only the leader appends, checked at append time
        # (the leader may have moved while the batch was checked).
        if misdirected(ctx, cluster, info.topic_id, index) is not None:
            leader = current_leader(cluster, info.topic_id, index)
            return with_field(
                _partition(index, ErrorCode.NOT_LEADER_OR_FOLLOWER), "current_leader", leader
            )
        replication = state.replication
        assert replication is not None
        if cluster.node_of(ctx.listener) in cluster.isolated:
            # A zombie leader checks its own stale ISR (it cannot reach the controller).
            part = cluster.partition(info.topic_id, index)
        else:
            part = replication.track(info.topic_id, index, plog)
        epoch = part.leader_epoch
        if acks == -1 and replication.under_min_isr(part, plog):
            # Partition.appendRecordsToLeader: an ISR below min.insync.replicas takes no
            # acks=all write (the log start offset answered, as ReplicaManager's other errors).
            log.info(
                "NOT_ENOUGH_REPLICAS for %s-%d: ISR %s (%s)", name, index, part.isr, ctx.describe()
            )
            return _failed(tp, ErrorCode.NOT_ENOUGH_REPLICAS, plog)
    settings = state.topic_settings(info)
    checked = entry.checked
    if checked.error != ErrorCode.NONE or checked.header is None:
        _log_refused(ctx, tp, checked.error, checked.message)
        return _failed(tp, checked.error, plog)
    header = checked.header
    verified = False
    if header.is_transactional and not plog.has_ongoing_txn(
        header.producer_id, header.producer_epoch
    ):
        error = state.transactions.verify(
            transactional_id or "", header.producer_id, header.producer_epoch, tp
        )
        if error != ErrorCode.NONE:
            log.info(
                "transactional batch for %s-%d refused by verification: %s (%s)",
                name,
                index,
                error.name,
                ctx.describe(),
            )
            # A pre-append error (ReplicaManager.handleProduceAppend): LogAppendInfo's
            # UNKNOWN_LOG_APPEND_INFO, so no log start offset.
            return _partition(index, _verification_error(error, ctx.version))
        verified = True
    verdict = entry.verdict
    assert verdict is not None
    if verdict.error != ErrorCode.NONE:
        _log_refused(ctx, tp, verdict.error, verdict.message)
        record_errors = [
            Message(batch_index=i, batch_index_error_message=text)
            for i, text in verdict.record_errors
        ]
        # Only LogValidator's RecordValidationException carries a message to the client.
        message = verdict.message if record_errors else None
        return _failed(tp, verdict.error, plog, record_errors=record_errors, message=message)
    batch, rewritten = entry.batch, entry.header
    assert batch is not None and rewritten is not None
    header = rewritten
    if cluster is not None and cluster.node_of(ctx.listener) in cluster.isolated:
        return _zombie_append(ctx, cluster, tp, plog, header, acks, appended, ends)
    if len(batch) > settings.max_message_bytes:
        # A rebuilt batch is measured again (UnifiedLog.append, messageSizeMaybeChanged).
        return _failed(tp, ErrorCode.MESSAGE_TOO_LARGE, plog)
    if len(batch) > settings.log_config.segment_bytes:
        _log_refused(ctx, tp, ErrorCode.RECORD_LIST_TOO_LARGE, f"{len(batch)} > segment.bytes")
        return _failed(tp, ErrorCode.RECORD_LIST_TOO_LARGE, plog)
    result = plog.append(batch, header, now_ms, epoch, verified=verified)
    if result.error != ErrorCode.NONE:
        log.info(
            "%s for %s-%d producer_id=%d epoch=%d base_sequence=%d (%s)",
            result.error.name,
            name,
            index,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            ctx.describe(),
        )
        return _failed(tp, result.error, plog)
    appended.append(plog)
    ends[tp] = result.base_offset + header.last_offset_delta + 1
    state.metrics.appended(name, header.last_offset_delta + 1, len(batch))
    return Message(
        index=index,
        error_code=ErrorCode.NONE,
        base_offset=result.base_offset,
        # LogAppendTime topics answer the broker's timestamp (a duplicate: the original
        # batch's, which storage reports, as Kafka's duplicate.timestamp).
        log_append_time_ms=now_ms
        if settings.log_append_time and result.log_append_time_ms < 0
        else result.log_append_time_ms,
        log_start_offset=result.log_start_offset,
        record_errors=[],
        error_message=None,
    )


def _zombie_append(
    ctx: RequestContext,
    cluster: Cluster,
    tp: _TopicPartition,
    plog: PartitionLog,
    header: BatchHeader,
    acks: int,
    appended: list[PartitionLog],
    ends: dict[_TopicPartition, int],
) -> Message:
    """An isolated node that still believes it leads appends to its own log, which no
    follower fetches and which is truncated to the new leader's when it rejoins: the batch
    gets the zombie's next offsets and is never readable (its high watermark stays where it
    was) nor kept in the partition's log. acks=all then waits for an ISR that never comes
    (Kafka's DelayedProduce: REQUEST_TIMED_OUT, or NOT_LEADER_OR_FOLLOWER once it rejoins)."""
    info = ctx.state.store.topic(tp[0])
    assert info is not None
    part = cluster.partition(leadership_key(info.name, info.topic_id), tp[1])
    base = plog.log_end_offset if part.zombie_end is None else part.zombie_end
    part.zombie_end = base + header.last_offset_delta + 1
    appended.append(plog)  # an acks=all answer waits as for an append
    ends[tp] = part.zombie_end
    log.info(
        "zombie append to %s-%d at %d on isolated node %d (acks=%d, %s)",
        tp[0],
        tp[1],
        base,
        cluster.node_of(ctx.listener),
        acks,
        ctx.describe(),
    )
    return Message(
        index=tp[1],
        error_code=ErrorCode.NONE,
        base_offset=base,
        log_append_time_ms=-1,
        log_start_offset=plog.log_start_offset,
        record_errors=[],
        error_message=None,
    )


async def _add_implicitly(
    ctx: RequestContext,
    transactional_id: str,
    entries: dict[_TopicPartition, _Entry],
    logs: dict[_TopicPartition, PartitionLog],
) -> dict[_TopicPartition, ErrorCode]:
    """Produce v12 (KIP-890 part 2): partitions with no transaction open for the batch's
    producer id and epoch are added to the transaction first (ReplicaManager's
    maybeStartTransactionVerificationForPartitions with the addPartition operation); the
    usual verification then finds them, right before the append. The errors to answer."""
    wanted: list[_TopicPartition] = []
    header: BatchHeader | None = None
    for tp, entry in entries.items():
        h = entry.checked.header
        if (
            h is not None
            and h.is_transactional
            and entry.checked.error == ErrorCode.NONE
            and not logs[tp].has_ongoing_txn(h.producer_id, h.producer_epoch)
        ):
            wanted.append(tp)
            header = h
    if header is None:
        return {}
    error = await ctx.state.transactions.add_implicitly(
        transactional_id, header.producer_id, header.producer_epoch, wanted
    )
    if error == ErrorCode.NONE:
        return {}
    log.info(
        "implicit add of %s to transaction %r refused: %s (%s)",
        wanted,
        transactional_id,
        error.name,
        ctx.describe(),
    )
    return dict.fromkeys(wanted, error)


def _txn_refused(
    ctx: RequestContext,
    request: Message,
    named: int,
    entries: dict[_TopicPartition, _Entry],
    txn_id: str | None,
) -> bool:
    """KafkaApis.handleProduceRequest's first check: a request with transactional records
    (RequestUtils.hasTransactionalRecords) needs a transactional id with WRITE on it. A
    transactional id without transactional records is not checked at all."""
    if len(entries) == named:
        # Every partition named once and checked: its one batch's header was read.
        if not any(
            e.checked.header is not None and e.checked.header.is_transactional
            for e in entries.values()
        ):
            return False
    elif not any(
        _first_batch_transactional(part.records)
        for topic in request.topic_data
        for part in topic.partition_data
    ):
        # Partitions answered early (denied, unknown, invalid) count too in Kafka.
        return False
    if txn_id is None:
        log.warning("transactional batch without a transactional id (%s)", ctx.describe())
        return True
    return not ctx.authorized(WRITE, TRANSACTIONAL_ID, txn_id)


def _first_batch_transactional(records: memoryview | bytes | None) -> bool:
    """Whether the first complete batch of ``records`` has the transactional bit, read as
    Kafka's batch iterator reads it (a v2 batch; a cut batch is none). The corrupt sizes
    and magics the iterator throws on count as not transactional: the checks refuse those
    batches anyway."""
    if records is None or len(records) <= _ATTRIBUTES_LOW_BYTE:
        return False
    size = _INT32.unpack_from(records, _LENGTH_AT)[0]
    return (
        records[_MAGIC_AT] == 2
        and size + _LOG_OVERHEAD <= len(records)
        and bool(records[_ATTRIBUTES_LOW_BYTE] & _TRANSACTIONAL_BIT)
    )


def _transactional(entries: dict[_TopicPartition, _Entry]) -> list[BatchHeader]:
    return [
        e.checked.header
        for e in entries.values()
        if e.checked.header is not None and e.checked.header.is_transactional
    ]


def _verification_error(error: ErrorCode, version: int) -> ErrorCode:
    """ReplicaManager / AddPartitionsToTxnManager's rewrites of a verification error."""
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error == ErrorCode.TRANSACTION_ABORTABLE and version <= LAST_VERSION_WITHOUT_ABORTABLE:
        return ErrorCode.INVALID_TXN_STATE
    if error == ErrorCode.CONCURRENT_TRANSACTIONS and version < IMPLICIT_ADD_VERSION:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    if error in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return error


# The rules last made for a partition, with the settings object they were made from
# (BrokerState hands out the same object until the topic's configs change).
_RULES: dict[_TopicPartition, tuple[TopicSettings, TopicRules]] = {}
_MAX_RULES = 10_000


def _rules(tp: _TopicPartition, settings: TopicSettings) -> TopicRules:
    known = _RULES.get(tp)
    if known is not None and known[0] is settings:
        return known[1]
    rules = TopicRules(
        topic_partition=f"{tp[0]}-{tp[1]}",
        compact=settings.compact,
        log_append_time=settings.log_append_time,
        timestamp_before_max_ms=settings.timestamp_before_max_ms,
        timestamp_after_max_ms=settings.timestamp_after_max_ms,
    )
    if len(_RULES) >= _MAX_RULES:
        _RULES.clear()  # deleted topics' entries go too
    _RULES[tp] = (settings, rules)
    return rules
