"""ConsumerGroupDescribe, versions 0-1 (KIP-848 consumer groups).

Behaviour: as Kafka 4.0's GroupMetadataManager.consumerGroupDescribe and
ConsumerGroup.asDescribedGroup: state, group epoch, assignment epoch, the assignor the members
prefer (default: the first of group.consumer.assignors), and each member with its epoch, ids,
subscription, current and target assignment (topic ids and names); v1 adds the member type (1 =
consumer protocol, 0 = a classic member of a migrating group; KIP-1099). An empty id gets
INVALID_GROUP_ID, a missing group GROUP_ID_NOT_FOUND "Group X not found.", a classic group
GROUP_ID_NOT_FOUND "Group X is not a consumer group." (recorded from Kafka 4.0.0 in
kafka-oracle/admin_groups_confluent); COORDINATOR_NOT_AVAILABLE while shutting down. With
include_authorized_operations, the operations Kafka allows on a group with no authorizer.
Authorization (with an authorizer): DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED;
authorized operations are the caller's. A group whose members' current or target assignment
names a topic the caller may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with no
members, as Kafka 4.0's KafkaApis.handleConsumerGroupDescribe (topic names, ids and
partition counts stay hidden).
"""

from __future__ import annotations

from broker.coordinator.groups.consumer import ConsumerGroup, TopicPartitions
from broker.core.authorized_operations import GROUP as GROUP_OPERATIONS
from broker.core.authorized_operations import NOT_REQUESTED, of
from broker.core.request_context import RequestContext
from broker.handlers._groups import coordinator
from broker.handlers._leadership import GROUP_KEY, not_coordinator
from broker.security.acl import DESCRIBE, GROUP, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.consumer_group_describe import CONSUMER_GROUP_DESCRIBE
from protocol.schema import Message

API = CONSUMER_GROUP_DESCRIBE
MIN_VERSION = 0
MAX_VERSION = 1

CONSUMER_MEMBER_TYPE = 1
# A member that joined through JoinGroup (online migration).
CLASSIC_MEMBER_TYPE = 0


def _assignment(ctx: RequestContext, parts: TopicPartitions) -> Message:
    out = []
    for topic_id, partitions in sorted(parts.items()):
        info = ctx.state.store.topic_by_id(topic_id)
        if info is None:
            continue  # Kafka leaves out topics no longer in the metadata image
        out.append(Message(topic_id=topic_id, topic_name=info.name, partitions=sorted(partitions)))
    return Message(topic_partitions=out)


def _describe(ctx: RequestContext, group: ConsumerGroup, with_operations: bool) -> Message:
    groups = coordinator(ctx)
    return Message(
        error_code=ErrorCode.NONE,
        error_message=None,
        group_id=group.group_id,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.preferred_assignor(groups.consumer.settings.assignors[0]),
        members=[
            Message(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=_assignment(ctx, m.assigned),
                target_assignment=_assignment(ctx, group.target.get(m.member_id, {})),
                member_type=CLASSIC_MEMBER_TYPE
                if m.uses_classic_protocol
                else CONSUMER_MEMBER_TYPE,
            )
            for m in group.members.values()
        ],
        authorized_operations=of(ctx, GROUP_OPERATIONS, GROUP, group.group_id)
        if with_operations
        else NOT_REQUESTED,
    )


def _error(group_id: str, code: int, message: str | None) -> Message:
    return Message(
        error_code=code,
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        assignor_name="",
        members=[],
        authorized_operations=NOT_REQUESTED,
    )


TOPICS_HIDDEN = "The group has described topic(s) that the client is not authorized to describe."


def _assigned_topics(described: Message) -> set[str]:
    return {
        tp.topic_name
        for member in described.members
        for assignment in (member.assignment, member.target_assignment)
        for tp in assignment.topic_partitions
    }


def _hide_unauthorized_topics(ctx: RequestContext, groups: list[Message]) -> list[Message]:
    """Kafka checks every topic the answer names once (filterByAuthorized, denials logged)
    and replaces each group naming a denied one by TOPIC_AUTHORIZATION_FAILED."""
    names = set().union(*(_assigned_topics(g) for g in groups))
    denied = {name for name in sorted(names) if not ctx.authorized(DESCRIBE, TOPIC, name)}
    return [
        _error(g.group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPICS_HIDDEN)
        if _assigned_topics(g) & denied
        else g
        for g in groups
    ]


def handle(ctx: RequestContext, request: Message) -> Message:
    groups = coordinator(ctx)
    cluster = ctx.state.cluster
    out = []
    for group_id in request.group_ids:
        if groups.closed:
            out.append(_error(group_id, ErrorCode.COORDINATOR_NOT_AVAILABLE, None))
        elif not group_id:
            out.append(_error("", ErrorCode.INVALID_GROUP_ID, None))
        elif not ctx.authorized(DESCRIBE, GROUP, group_id):
            out.append(_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
        elif cluster is not None and not_coordinator(ctx, cluster, GROUP_KEY, group_id):
            # Another node of a simulated cluster coordinates it.
            out.append(_error(group_id, ErrorCode.NOT_COORDINATOR, None))
        else:
            found = groups.describe_consumer_group(group_id)
            if isinstance(found, str):
                out.append(_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, found))
            else:
                out.append(_describe(ctx, found, request.include_authorized_operations))
    if ctx.state.authorizer is not None:
        out = _hide_unauthorized_topics(ctx, out)
    return Message(throttle_time_ms=0, groups=out)
