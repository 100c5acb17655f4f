"""DescribeProducers, version 0 (KIP-664).

Behaviour: for each requested partition, the idempotent producers this broker holds state for
(storage.producer_state): producer id, epoch, the last sequence it appended, Kafka's
lastTimestamp (its last batch's max timestamp, or its last marker's time), the coordinator
epoch of its last COMMIT/ABORT marker (-1 before any) and the first offset of its open
transaction (-1 when none; Kafka's currentTxnStartOffset, what `kafka-transactions.sh abort
--start-offset` and `find-hanging` look for). A producer that expired
(producer.id.expiration.ms, counted from that timestamp) is no longer listed; one whose
records were all removed (retention, DeleteRecords) still is, as in Kafka since KAFKA-7190.
Unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; as in Kafka's
handleDescribeProducersRequest, only an unknown topic carries the error's default message
("This server does not host this topic-partition."): an unknown partition of a known topic
comes from ReplicaManager.activeProducerState, which sets none.
Authorization (with an authorizer): READ on each topic, else TOPIC_AUTHORIZATION_FAILED.
In a simulated cluster only the partition's leader answers (else NOT_LEADER_OR_FOLLOWER).
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._leadership import served_here
from broker.security.acl import READ, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.describe_producers import DESCRIBE_PRODUCERS
from protocol.schema import Message

API = DESCRIBE_PRODUCERS
MIN_VERSION = 0
MAX_VERSION = 0

# Errors.UNKNOWN_TOPIC_OR_PARTITION's default message.
_NOT_HOSTED = "This server does not host this topic-partition."


def handle(ctx: RequestContext, request: Message) -> Message:
    store = ctx.state.store
    topics: list[Message] = []
    for topic in request.topics:
        partitions: list[Message] = []
        known_topic = store.topic(topic.name) is not None
        if not ctx.authorized(READ, TOPIC, topic.name):
            # KafkaApis.handleDescribeProducersRequest: READ on the topic.
            partitions = [
                Message(
                    partition_index=index,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    error_message=None,
                    active_producers=[],
                )
                for index in topic.partition_indexes
            ]
            topics.append(Message(name=topic.name, partitions=partitions))
            continue
        for index in topic.partition_indexes:
            plog = store.partition(topic.name, index)
            if plog is None:
                partitions.append(
                    Message(
                        partition_index=index,
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        error_message=None if known_topic else _NOT_HOSTED,
                        active_producers=[],
                    )
                )
                continue
            cluster = ctx.state.cluster
            if (
                cluster is not None
                and served_here(ctx, cluster, topic.name, index, replica_ok=False) is None
            ):
                # ReplicaManager.activeProducerState: the leader's (a simulated cluster).
                partitions.append(
                    Message(
                        partition_index=index,
                        error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                        error_message=None,
                        active_producers=[],
                    )
                )
                continue
            producers = []
            for entry in sorted(plog.producers, key=lambda e: e.producer_id):
                producers.append(
                    Message(
                        producer_id=entry.producer_id,
                        producer_epoch=entry.epoch,
                        last_sequence=entry.last_seq,
                        # The entry's, which a COMMIT/ABORT marker also moves (Kafka's
                        # ProducerAppendInfo.appendEndTxnMarker), not the last batch's.
                        last_timestamp=entry.last_timestamp_ms,
                        coordinator_epoch=entry.coordinator_epoch,
                        current_txn_start_offset=entry.current_txn_first_offset,
                    )
                )
            partitions.append(
                Message(
                    partition_index=index,
                    error_code=ErrorCode.NONE,
                    error_message=None,
                    active_producers=producers,
                )
            )
        topics.append(Message(name=topic.name, partitions=partitions))
    return Message(throttle_time_ms=0, topics=topics)
