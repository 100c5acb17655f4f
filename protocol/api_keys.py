"""Every API this project describes, by key."""

from __future__ import annotations

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.delete_groups import DELETE_GROUPS
from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.fetch import FETCH
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.messages.heartbeat import HEARTBEAT
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.leave_group import LEAVE_GROUP
from protocol.messages.list_groups import LIST_GROUPS
from protocol.messages.list_offsets import LIST_OFFSETS
from protocol.messages.metadata import METADATA
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.offset_delete import OFFSET_DELETE
from protocol.messages.offset_fetch import OFFSET_FETCH
from protocol.messages.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from protocol.messages.produce import PRODUCE
from protocol.messages.sync_group import SYNC_GROUP
from protocol.schema import Api

ALL_APIS: dict[int, Api] = {
    a.key: a
    for a in (
        PRODUCE,
        FETCH,
        METADATA,
        API_VERSIONS,
        INIT_PRODUCER_ID,
        # Consumer groups (classic protocol) and committed offsets.
        OFFSET_COMMIT,
        OFFSET_FETCH,
        FIND_COORDINATOR,
        JOIN_GROUP,
        HEARTBEAT,
        LEAVE_GROUP,
        SYNC_GROUP,
        DESCRIBE_GROUPS,
        LIST_GROUPS,
        DELETE_GROUPS,
        OFFSET_DELETE,
        # Consume path: offsets by time and leader-epoch validation.
        LIST_OFFSETS,
        OFFSET_FOR_LEADER_EPOCH,
    )
}
