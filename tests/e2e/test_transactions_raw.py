"""Transactions over raw sockets: coordinator errors, offsets in transactions, restarts.

Each answer is checked field by field and against what the broker stored (segment files,
the coordinator's state log reloaded after a SIGKILL).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.messages.add_offsets_to_txn import ADD_OFFSETS_TO_TXN
from protocol.messages.add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from protocol.messages.end_txn import END_TXN
from protocol.messages.fetch import FETCH
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.messages.list_offsets import LIST_OFFSETS
from protocol.messages.produce import PRODUCE
from protocol.messages.txn_offset_commit import TXN_OFFSET_COMMIT
from protocol.schema import Message
from tests.e2e.test_fetch_limits import READ_COMMITTED, fetch_body
from tests.support.broker_process import BrokerProcess
from tests.support.group_offsets import committed_topic, fetch_committed
from tests.support.produce import batch, create_topic, stored
from tests.support.raw_client import RawClient

TXN = "raw-txn"


def init(client: RawClient, txn_id: str = TXN, version: int = 4) -> Message:
    return client.request(
        INIT_PRODUCER_ID,
        version,
        Message(transactional_id=txn_id, transaction_timeout_ms=60000),
    )


def init_ids(client: RawClient, txn_id: str = TXN, version: int = 4) -> tuple[int, int]:
    """InitProducerId for a transactional id, checked to succeed: (producer id, epoch)."""
    answer = init(client, txn_id, version)
    assert answer.error_code == ErrorCode.NONE
    return answer.producer_id, answer.producer_epoch


def add_partition(client: RawClient, pid: int, epoch: int, topic: str, version: int = 3) -> int:
    answer = client.request(
        ADD_PARTITIONS_TO_TXN,
        version,
        Message(
            v3_and_below_transactional_id=TXN,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[Message(name=topic, partitions=[0])],
        ),
    )
    code: int = answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
    return code


def txn_produce(client: RawClient, topic: str, data: bytes, version: int = 9) -> int:
    answer = client.request(
        PRODUCE,
        version,
        Message(
            transactional_id=TXN,
            acks=-1,
            timeout_ms=30000,
            topic_data=[Message(name=topic, partition_data=[Message(index=0, records=data)])],
        ),
    )
    code: int = answer.responses[0].partition_responses[0].error_code
    return code


def end(client: RawClient, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    answer = client.request(
        END_TXN,
        version,
        Message(transactional_id=TXN, producer_id=pid, producer_epoch=epoch, committed=commit),
    )
    code: int = answer.error_code
    return code


def open_transaction(client: RawClient, topic: str) -> tuple[int, int]:
    """A new topic with a transaction left open on its partition 0 (one batch of two
    records at offsets 0-1, each step checked): the producer's (id, epoch)."""
    create_topic(client, topic)
    pid, epoch = init_ids(client)
    assert add_partition(client, pid, epoch, topic) == ErrorCode.NONE
    assert txn_produce(client, topic, batch(pid, epoch, 0, transactional=True)) == ErrorCode.NONE
    return pid, epoch


def txn_commit_offset(
    client: RawClient,
    group: str,
    topic: str,
    ids: tuple[int, int],
    offset: int,
    version: int = 3,
) -> int:
    """TxnOffsetCommit of one offset for partition 0 of topic: its error code."""
    pid, epoch = ids
    reply = client.request(
        TXN_OFFSET_COMMIT,
        version,
        Message(
            transactional_id=TXN,
            group_id=group,
            producer_id=pid,
            producer_epoch=epoch,
            generation_id=-1,
            member_id="",
            group_instance_id=None,
            topics=[committed_topic(topic, {0: offset})],
        ),
    )
    code: int = reply.topics[0].partitions[0].error_code
    return code


def lso_and_aborted(client: RawClient, topic: str) -> tuple[int, int, list[tuple[int, int]]]:
    """Fetch v12 read_committed of partition 0 from offset 0: (high watermark, LSO, the
    aborted transactions as (producer id, first offset))."""
    body = fetch_body(
        topic,
        [(0, 0)],
        max_bytes=1 << 20,
        partition_max_bytes=1 << 20,
        isolation_level=READ_COMMITTED,
    )
    answer = client.request(FETCH, 12, body)
    part = answer.responses[0].partitions[0]
    aborted = [(a.producer_id, a.first_offset) for a in part.aborted_transactions]
    return part.high_watermark, part.last_stable_offset, aborted


def latest(client: RawClient, topic: str, isolation: int) -> int:
    answer = client.request(
        LIST_OFFSETS,
        5,
        Message(
            replica_id=-1,
            isolation_level=isolation,
            topics=[
                Message(
                    name=topic,
                    partitions=[Message(partition_index=0, current_leader_epoch=-1, timestamp=-1)],
                )
            ],
        ),
    )
    offset: int = answer.topics[0].partitions[0].offset
    return offset


def test_transactional_produce_needs_the_partition_added_first(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "raw-t")
        pid, epoch = init_ids(c)
        data = batch(pid, epoch, 0, transactional=True)
        # Produce v9 without AddPartitionsToTxn: KIP-890 verification says TRANSACTION_ABORTABLE,
        # which Produce v10 and older clients get as INVALID_TXN_STATE.
        assert txn_produce(c, "raw-t", data) == ErrorCode.INVALID_TXN_STATE
        assert stored(broker.data_dir, "raw-t") == []
        assert add_partition(c, pid, epoch + 1, "raw-t") == ErrorCode.PRODUCER_FENCED
        assert add_partition(c, pid, epoch, "raw-t", version=1) == ErrorCode.NONE
        assert txn_produce(c, "raw-t", batch(pid, epoch + 1, 0, transactional=True)) == (
            ErrorCode.INVALID_PRODUCER_EPOCH
        )
        assert txn_produce(c, "raw-t", data) == ErrorCode.NONE
        assert lso_and_aborted(c, "raw-t") == (2, 0, [])
        assert (latest(c, "raw-t", 0), latest(c, "raw-t", 1)) == (2, 0)
        assert end(c, pid, epoch, commit=False) == ErrorCode.NONE
        assert end(c, pid, epoch, commit=False) == ErrorCode.NONE  # a retry
        assert end(c, pid, epoch, commit=True) == ErrorCode.INVALID_TXN_STATE
        assert lso_and_aborted(c, "raw-t") == (3, 3, [(pid, 0)])
        assert latest(c, "raw-t", 1) == 3
    (first, _), (marker, _) = stored(broker.data_dir, "raw-t")
    assert first.is_transactional and not first.is_control
    assert marker.is_control and marker.producer_epoch == epoch


def test_init_with_an_open_transaction_fences_and_aborts_it(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "raw-f")
        pid, epoch = init_ids(c)
        assert add_partition(c, pid, epoch, "raw-f") == ErrorCode.NONE
        assert txn_produce(c, "raw-f", batch(pid, epoch, 0, transactional=True)) == 0
        assert init(c).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
        again = init(c)
        assert (again.error_code, again.producer_id, again.producer_epoch) == (0, pid, epoch + 2)
        # The zombie: EndTxn v1 answers INVALID_PRODUCER_EPOCH (PRODUCER_FENCED from v2).
        assert end(c, pid, epoch, commit=True, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert end(c, pid, epoch, commit=True, version=2) == ErrorCode.PRODUCER_FENCED
        assert txn_produce(c, "raw-f", batch(pid, epoch, 2, transactional=True)) == (
            ErrorCode.INVALID_PRODUCER_EPOCH
        )
        assert lso_and_aborted(c, "raw-f") == (3, 3, [(pid, 0)])
    marker = stored(broker.data_dir, "raw-f")[-1][0]
    assert marker.is_control and marker.producer_epoch == epoch + 1


def test_transactional_offsets_become_visible_only_on_commit(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "raw-o")
        pid, epoch = init_ids(c)

        def commit_offset(offset: int) -> int:
            return txn_commit_offset(c, "raw-group", "raw-o", (pid, epoch), offset)

        def fetch_offset(require_stable: bool) -> tuple[int, int]:
            return fetch_committed(c, "raw-group", "raw-o", require_stable)

        # Without AddOffsetsToTxn the offsets partition is not in the transaction.
        assert commit_offset(5) == ErrorCode.INVALID_TXN_STATE
        added = c.request(
            ADD_OFFSETS_TO_TXN,
            3,
            Message(
                transactional_id=TXN, producer_id=pid, producer_epoch=epoch, group_id="raw-group"
            ),
        )
        assert added.error_code == 0
        assert commit_offset(5) == ErrorCode.NONE
        assert fetch_offset(False) == (0, -1)
        assert fetch_offset(True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        assert end(c, pid, epoch, commit=True) == ErrorCode.NONE
        assert fetch_offset(True) == (0, 5)
        # An aborted transaction's offsets never show.
        c.request(
            ADD_OFFSETS_TO_TXN,
            3,
            Message(
                transactional_id=TXN, producer_id=pid, producer_epoch=epoch, group_id="raw-group"
            ),
        )
        assert commit_offset(9) == ErrorCode.NONE
        assert end(c, pid, epoch, commit=False) == ErrorCode.NONE
        assert fetch_offset(True) == (0, 5)


def test_coordinator_state_survives_sigkill(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        pid, epoch = open_transaction(c, "raw-k")
    broker.kill()
    broker.start()
    with RawClient(broker.port) as c:
        # The open transaction was reloaded: the LSO still waits for it, and the producer
        # carries on with the same id and epoch.
        assert lso_and_aborted(c, "raw-k") == (2, 0, [])
        assert txn_produce(c, "raw-k", batch(pid, epoch, 2, transactional=True)) == 0
        assert end(c, pid, epoch, commit=True) == ErrorCode.NONE
        assert lso_and_aborted(c, "raw-k") == (5, 5, [])
        again = init(c)
        assert (again.producer_id, again.producer_epoch) == (pid, epoch + 1)
    assert (broker.data_dir / "transaction-state.log").stat().st_size > 0


def test_produce_refused_by_verification_answers_no_log_start_offset(
    broker: BrokerProcess,
) -> None:
    """ReplicaManager answers a batch its transaction verification refused with a bare
    PartitionResponse(error): log_start_offset -1, as Kafka did in the oracle's
    txn_zombie_fencing and raw_epoch_fencing_txn; a refusal by the log itself (the
    producer-state check) reports the log start offset."""

    def produce_answer(client: RawClient, data: bytes) -> tuple[int, int]:
        answer = client.request(
            PRODUCE,
            10,
            Message(
                transactional_id=TXN,
                acks=-1,
                timeout_ms=30000,
                topic_data=[Message(name="raw-v", partition_data=[Message(index=0, records=data)])],
            ),
        )
        part = answer.responses[0].partition_responses[0]
        return part.error_code, part.log_start_offset

    with RawClient(broker.port) as c:
        create_topic(c, "raw-v")
        pid, epoch = init_ids(c)
        # Not added to the transaction: the coordinator refuses it.
        assert produce_answer(c, batch(pid, epoch, 0, transactional=True)) == (
            ErrorCode.INVALID_TXN_STATE,
            -1,
        )
        assert add_partition(c, pid, epoch, "raw-v") == ErrorCode.NONE
        assert produce_answer(c, batch(pid, epoch, 0, transactional=True)) == (0, 0)
        # An open transaction on the partition: the log's own check answers, with the
        # log start offset.
        assert produce_answer(c, batch(pid, epoch, 5, transactional=True)) == (
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
            0,
        )


def test_produce_sent_with_add_offsets_to_txn_is_not_refused_as_concurrent(
    broker: BrokerProcess,
) -> None:
    """aiokafka sends AddOffsetsToTxn (coordinator connection) and the transaction's first
    Produce (leader connection) in the same millisecond. Kafka's verification checks the
    producer id, epoch, the prepare states and the partition, not the pending state ("there
    is a final validation on the append to the log"): the Produce is appended at once,
    never answered CONCURRENT_TRANSACTIONS (NOT_ENOUGH_REPLICAS before Produce v8)."""
    rounds = 20
    with RawClient(broker.port) as coordinator, RawClient(broker.port) as leader:
        create_topic(coordinator, "raw-c")
        pid, epoch = init_ids(coordinator)
        answers = []
        for i in range(rounds):
            assert add_partition(coordinator, pid, epoch, "raw-c") == ErrorCode.NONE
            coordinator.send(
                ADD_OFFSETS_TO_TXN,
                3,
                Message(
                    transactional_id=TXN,
                    producer_id=pid,
                    producer_epoch=epoch,
                    group_id="raw-c-group",
                ),
            )
            data = batch(pid, epoch, 2 * i, transactional=True)
            leader.send(PRODUCE, 9, produce_request_for_txn("raw-c", data))
            produced = leader.receive()[1].responses[0].partition_responses[0]
            added = coordinator.receive()[1]
            answers.append((produced.error_code, added.error_code))
            assert end(coordinator, pid, epoch, commit=True) == ErrorCode.NONE
    assert answers == [(ErrorCode.NONE, ErrorCode.NONE)] * rounds
    data_batches = [h for h, _ in stored(broker.data_dir, "raw-c") if not h.is_control]
    assert [h.base_sequence for h in data_batches] == [2 * i for i in range(rounds)]


def produce_request_for_txn(topic: str, data: bytes) -> Message:
    return Message(
        transactional_id=TXN,
        acks=-1,
        timeout_ms=30000,
        topic_data=[Message(name=topic, partition_data=[Message(index=0, records=data)])],
    )
