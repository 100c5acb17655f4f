"""ListGroups, versions 0-5.

Behaviour: every group this broker coordinates, including simple-consumer groups that only
committed offsets (protocol type ""). v4 filters by state, v5 by type (case-insensitive, as
Kafka): "classic" groups, and KIP-848 "consumer" groups (protocol type "consumer", states
Empty/Assigning/Reconciling/Stable, as Kafka's ConsumerGroup.asListedGroup) and KIP-932
"share" groups (protocol type "share", Empty/Stable).
Authorization (with an authorizer): DESCRIBE on the cluster lists every group, else only
the groups the caller may DESCRIBE, of every type (Kafka filters the coordinator's whole
answer, classic and consumer groups alike). A simulated cluster's node lists the groups it
coordinates.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._groups import coordinator
from broker.handlers._leadership import GROUP_KEY, not_coordinator
from broker.security.acl import CLUSTER, CLUSTER_NAME, DESCRIBE, GROUP
from protocol.errors import ErrorCode
from protocol.messages.list_groups import LIST_GROUPS
from protocol.schema import Message

API = LIST_GROUPS
MIN_VERSION = 0
MAX_VERSION = 5

GROUP_TYPE = "classic"
CONSUMER_GROUP_TYPE = "consumer"
# KIP-932 share groups (ShareGroup.asListedGroup: protocol type and type "share").
SHARE_GROUP_TYPE = "share"


def handle(ctx: RequestContext, request: Message) -> Message:
    states = {s.lower() for s in request.states_filter} if ctx.version >= 4 else set()
    types = {t.lower() for t in request.types_filter} if ctx.version >= 5 else set()
    # KafkaApis.handleListGroupsRequest: DESCRIBE on the cluster lists every group, else
    # only the groups the caller may DESCRIBE.
    everything = ctx.authorized(DESCRIBE, CLUSTER, CLUSTER_NAME, log_denied=False)

    cluster = ctx.state.cluster

    def visible(group_id: str) -> bool:
        # A simulated cluster's node lists only the groups it coordinates, as each Kafka
        # broker does (admin clients ask every node and merge).
        if cluster is not None and not_coordinator(ctx, cluster, GROUP_KEY, group_id):
            return False
        return everything or ctx.authorized(DESCRIBE, GROUP, group_id, log_denied=False)

    listed = []
    if not types or GROUP_TYPE in types:
        for group in coordinator(ctx).list_groups():
            if states and group.state.value.lower() not in states:
                continue
            if not visible(group.group_id):
                continue
            listed.append(
                Message(
                    group_id=group.group_id,
                    protocol_type=group.protocol_type or "",
                    group_state=group.state.value,
                    group_type=GROUP_TYPE,
                )
            )
    if not types or CONSUMER_GROUP_TYPE in types:
        for consumer_group in coordinator(ctx).consumer.groups.values():
            state = consumer_group.state.value
            if states and state.lower() not in states:
                continue
            if not visible(consumer_group.group_id):
                continue
            listed.append(
                Message(
                    group_id=consumer_group.group_id,
                    protocol_type=CONSUMER_GROUP_TYPE,
                    group_state=state,
                    group_type=CONSUMER_GROUP_TYPE,
                )
            )
    if not types or SHARE_GROUP_TYPE in types:
        shares = ctx.state.shares
        shares.expire_members()
        for share_group in shares.groups.values():
            if states and share_group.state.lower() not in states:
                continue
            if not visible(share_group.group_id):
                continue
            listed.append(
                Message(
                    group_id=share_group.group_id,
                    protocol_type=SHARE_GROUP_TYPE,
                    group_state=share_group.state,
                    group_type=SHARE_GROUP_TYPE,
                )
            )
    return Message(throttle_time_ms=0, error_code=ErrorCode.NONE, groups=listed)
