"""One module per API. Each declares API, MIN_VERSION, MAX_VERSION and handle(ctx, request)."""

from __future__ import annotations

from types import ModuleType

from broker.dispatch import Dispatcher
from broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_topic_partitions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sync_group,
    txn_offset_commit,
)

MODULES: tuple[ModuleType, ...] = (
    produce,
    fetch,
    metadata,
    api_versions,
    init_producer_id,
    # Consumer groups (broker.groups).
    offset_commit,
    offset_fetch,
    find_coordinator,
    join_group,
    heartbeat,
    consumer_group_heartbeat,
    consumer_group_describe,
    leave_group,
    sync_group,
    describe_groups,
    list_groups,
    delete_groups,
    offset_delete,
    # Consume path: offsets by time, position validation.
    list_offsets,
    offset_for_leader_epoch,
    # Admin APIs and topic configs.
    create_topics,
    delete_topics,
    delete_records,
    create_partitions,
    describe_configs,
    alter_configs,
    incremental_alter_configs,
    describe_cluster,
    describe_log_dirs,
    describe_topic_partitions,
    describe_producers,
    # Cluster-admin APIs a single node answers (issue 12).
    elect_leaders,
    alter_partition_reassignments,
    list_partition_reassignments,
    alter_replica_log_dirs,
    describe_quorum,
    describe_client_quotas,
    alter_client_quotas,
    describe_user_scram_credentials,
    alter_user_scram_credentials,
    # Transactions (broker.transactions).
    add_partitions_to_txn,
    add_offsets_to_txn,
    end_txn,
    txn_offset_commit,
)


def build_dispatcher() -> Dispatcher:
    dispatcher = Dispatcher()
    for module in MODULES:
        dispatcher.register(
            module.API,
            module.handle,
            module.MIN_VERSION,
            module.MAX_VERSION,
            getattr(module, "ADVERTISED_MIN_VERSION", None),
        )
    return dispatcher
