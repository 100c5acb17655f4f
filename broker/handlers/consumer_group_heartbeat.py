"""ConsumerGroupHeartbeat, versions 0-1 (KIP-848 consumer groups, ``group.protocol=consumer``).

Behaviour: broker.coordinator.groups.consumer_manager, as Kafka 4.0's
GroupMetadataManager.consumerGroupHeartbeat: join with epoch 0 (v0: the broker names the
member; v1: the client generates its member id, KIP-1082, and may subscribe by regex), leave
with -1 (or -2 for a static member's temporary leave); the answer carries the member epoch,
the heartbeat interval (group.consumer.heartbeat.interval.ms) and the assignment (topic ids and
partitions) when it is new. Errors with Kafka's messages: INVALID_REQUEST, UNSUPPORTED_ASSIGNOR,
INVALID_REGULAR_EXPRESSION, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, FENCED_INSTANCE_ID,
UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND, COORDINATOR_NOT_AVAILABLE
while shutting down. An error answer has member epoch 0, interval 0 and no member id, as
Kafka's. The answer waits for the group's record to be fsynced when it changed.
A join (epoch 0) to a non-empty classic group upgrades it to a consumer group when
group.consumer.migration.policy allows (Kafka's default bidirectional; else GROUP_ID_NOT_FOUND
"Cannot upgrade classic group X to consumer group because ..."), see
broker.coordinator.groups.migration. A share group's id (KIP-932): GROUP_ID_NOT_FOUND "Group X
is not a consumer group.".
Authorization (with an authorizer), as KafkaApis.handleConsumerGroupHeartbeat: READ on the
group, else GROUP_AUTHORIZATION_FAILED; DESCRIBE on every subscribed topic name, else
TOPIC_AUTHORIZATION_FAILED (nothing changes in the group); a regex resolution that a
heartbeat starts keeps only the topics its principal may DESCRIBE.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from broker.coordinator.groups.consumer_manager import HeartbeatRequest
from broker.core.request_context import RequestContext
from broker.handlers._groups import client_host, coordinator
from broker.handlers._leadership import GROUP_KEY, not_coordinator
from broker.security.acl import DESCRIBE, GROUP, READ, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from protocol.schema import Message

API = CONSUMER_GROUP_HEARTBEAT
MIN_VERSION = 0
MAX_VERSION = 1


def _refused(error: ErrorCode, message: str | None = None) -> Message:
    return Message(
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
    )


def _may_describe(ctx: RequestContext) -> Callable[[str], bool] | None:
    """DESCRIBE on a topic for this request's principal and address: a regex resolution that
    this heartbeat starts keeps only those topics (GroupMetadataManager.
    filterTopicDescribeAuthorizedTopics, with the heartbeat's request context; denials are
    not logged there). The authorizer's index is replaced, never changed in place, so the
    worker thread may read it."""
    authorizer = ctx.state.authorizer
    if authorizer is None:
        return None
    return partial(
        authorizer.authorize, str(ctx.principal), ctx.host, DESCRIBE, TOPIC, log_denied=False
    )


async def handle(ctx: RequestContext, request: Message) -> Message:
    if not ctx.authorized(READ, GROUP, request.group_id):
        # KafkaApis.handleConsumerGroupHeartbeat: READ on the group.
        return _refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    # Kafka: a client may not subscribe by name to a topic it may not DESCRIBE (each name
    # checked once, denials logged).
    names = request.subscribed_topic_names
    if names and not all([ctx.authorized(DESCRIBE, TOPIC, n) for n in dict.fromkeys(names)]):
        return _refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    cluster = ctx.state.cluster
    if cluster is not None and not_coordinator(ctx, cluster, GROUP_KEY, request.group_id):
        return _refused(ErrorCode.NOT_COORDINATOR)
    if request.group_id in ctx.state.shares.groups:
        # GroupMetadataManager.getOrMaybeCreateConsumerGroup: one id names one kind of group.
        return _refused(
            ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a consumer group."
        )
    owned = (
        None
        if request.topic_partitions is None
        else [(bytes(t.topic_id), list(t.partitions)) for t in request.topic_partitions]
    )
    result = await coordinator(ctx).consumer_heartbeat(
        HeartbeatRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            instance_id=request.instance_id,
            rack_id=request.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_topic_names=request.subscribed_topic_names,
            subscribed_topic_regex=request.subscribed_topic_regex,
            server_assignor=request.server_assignor,
            owned=owned,
            client_id=ctx.client_id or "",
            client_host=client_host(ctx),
            version=ctx.version,
            may_describe=_may_describe(ctx),
        )
    )
    assignment = None
    if result.assignment is not None:
        assignment = Message(
            topic_partitions=[
                Message(topic_id=topic_id, partitions=sorted(parts))
                for topic_id, parts in sorted(result.assignment.items())
            ]
        )
    return Message(
        throttle_time_ms=0,
        error_code=result.error,
        error_message=result.message,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=assignment,
    )
