"""Every API this project describes, by key."""

from __future__ import annotations

from protocol.messages.add_offsets_to_txn import ADD_OFFSETS_TO_TXN
from protocol.messages.add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from protocol.messages.alter_client_quotas import ALTER_CLIENT_QUOTAS
from protocol.messages.alter_configs import ALTER_CONFIGS
from protocol.messages.alter_partition_reassignments import ALTER_PARTITION_REASSIGNMENTS
from protocol.messages.alter_replica_log_dirs import ALTER_REPLICA_LOG_DIRS
from protocol.messages.alter_user_scram_credentials import ALTER_USER_SCRAM_CREDENTIALS
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.consumer_group_describe import CONSUMER_GROUP_DESCRIBE
from protocol.messages.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from protocol.messages.create_acls import CREATE_ACLS
from protocol.messages.create_partitions import CREATE_PARTITIONS
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.delete_acls import DELETE_ACLS
from protocol.messages.delete_groups import DELETE_GROUPS
from protocol.messages.delete_records import DELETE_RECORDS
from protocol.messages.delete_topics import DELETE_TOPICS
from protocol.messages.describe_acls import DESCRIBE_ACLS
from protocol.messages.describe_client_quotas import DESCRIBE_CLIENT_QUOTAS
from protocol.messages.describe_cluster import DESCRIBE_CLUSTER
from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.messages.describe_groups import DESCRIBE_GROUPS
from protocol.messages.describe_log_dirs import DESCRIBE_LOG_DIRS
from protocol.messages.describe_producers import DESCRIBE_PRODUCERS
from protocol.messages.describe_quorum import DESCRIBE_QUORUM
from protocol.messages.describe_topic_partitions import DESCRIBE_TOPIC_PARTITIONS
from protocol.messages.describe_transactions import DESCRIBE_TRANSACTIONS
from protocol.messages.describe_user_scram_credentials import DESCRIBE_USER_SCRAM_CREDENTIALS
from protocol.messages.elect_leaders import ELECT_LEADERS
from protocol.messages.end_txn import END_TXN
from protocol.messages.fetch import FETCH
from protocol.messages.find_coordinator import FIND_COORDINATOR
from protocol.messages.heartbeat import HEARTBEAT
from protocol.messages.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from protocol.messages.init_producer_id import INIT_PRODUCER_ID
from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.leave_group import LEAVE_GROUP
from protocol.messages.list_groups import LIST_GROUPS
from protocol.messages.list_offsets import LIST_OFFSETS
from protocol.messages.list_partition_reassignments import LIST_PARTITION_REASSIGNMENTS
from protocol.messages.list_transactions import LIST_TRANSACTIONS
from protocol.messages.metadata import METADATA
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.offset_delete import OFFSET_DELETE
from protocol.messages.offset_fetch import OFFSET_FETCH
from protocol.messages.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from protocol.messages.produce import PRODUCE
from protocol.messages.sasl_authenticate import SASL_AUTHENTICATE
from protocol.messages.sasl_handshake import SASL_HANDSHAKE
from protocol.messages.share_acknowledge import SHARE_ACKNOWLEDGE
from protocol.messages.share_fetch import SHARE_FETCH
from protocol.messages.share_group_describe import SHARE_GROUP_DESCRIBE
from protocol.messages.share_group_heartbeat import SHARE_GROUP_HEARTBEAT
from protocol.messages.share_group_offsets import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
)
from protocol.messages.sync_group import SYNC_GROUP
from protocol.messages.txn_offset_commit import TXN_OFFSET_COMMIT
from protocol.messages.write_txn_markers import WRITE_TXN_MARKERS
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
        # KIP-848 consumer groups (issue 18).
        CONSUMER_GROUP_HEARTBEAT,
        CONSUMER_GROUP_DESCRIBE,
        # Admin APIs and topic configs.
        CREATE_TOPICS,
        DELETE_TOPICS,
        DELETE_RECORDS,
        DESCRIBE_CONFIGS,
        ALTER_CONFIGS,
        DESCRIBE_LOG_DIRS,
        CREATE_PARTITIONS,
        INCREMENTAL_ALTER_CONFIGS,
        DESCRIBE_CLUSTER,
        DESCRIBE_PRODUCERS,
        DESCRIBE_TOPIC_PARTITIONS,
        # Consume path: offsets by time and leader-epoch validation.
        LIST_OFFSETS,
        OFFSET_FOR_LEADER_EPOCH,
        # Cluster-admin APIs a single node answers (issue 12).
        ELECT_LEADERS,
        ALTER_PARTITION_REASSIGNMENTS,
        LIST_PARTITION_REASSIGNMENTS,
        ALTER_REPLICA_LOG_DIRS,
        DESCRIBE_QUORUM,
        DESCRIBE_CLIENT_QUOTAS,
        ALTER_CLIENT_QUOTAS,
        DESCRIBE_USER_SCRAM_CREDENTIALS,
        ALTER_USER_SCRAM_CREDENTIALS,
        # Security (issue 17).
        SASL_HANDSHAKE,
        SASL_AUTHENTICATE,
        DESCRIBE_ACLS,
        CREATE_ACLS,
        DELETE_ACLS,
        # Transactions (issue 14).
        ADD_PARTITIONS_TO_TXN,
        ADD_OFFSETS_TO_TXN,
        END_TXN,
        WRITE_TXN_MARKERS,
        TXN_OFFSET_COMMIT,
        DESCRIBE_TRANSACTIONS,
        LIST_TRANSACTIONS,
        # KIP-932 share groups.
        SHARE_GROUP_HEARTBEAT,
        SHARE_GROUP_DESCRIBE,
        SHARE_FETCH,
        SHARE_ACKNOWLEDGE,
        DESCRIBE_SHARE_GROUP_OFFSETS,
        ALTER_SHARE_GROUP_OFFSETS,
        DELETE_SHARE_GROUP_OFFSETS,
    )
}
