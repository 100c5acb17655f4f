"""One module per API. Each declares API, MIN_VERSION, MAX_VERSION and handle(ctx, request).

The broker registers them from HANDLERS, which repeats what each module declares, so that it
advertises every API (ApiVersions) at start without importing any handler: a module, and
what only it needs, is imported on the first request for its API (Dispatcher.handler).
tests/broker/test_handler_table.py checks HANDLERS against the modules themselves.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import NamedTuple

from broker.core.dispatch import Dispatcher


class HandlerEntry(NamedTuple):
    """A handler module's declarations: broker.handlers.<module> serves API key ``key``."""

    module: str
    key: int
    min_version: int
    max_version: int
    advertised_min: int | None = None  # ADVERTISED_MIN_VERSION, if the module has one
    feature: str | None = None  # FEATURE, if the module has one


HANDLERS: tuple[HandlerEntry, ...] = (
    HandlerEntry("produce", 0, 3, 12, 0),
    HandlerEntry("fetch", 1, 4, 17),
    HandlerEntry("metadata", 3, 0, 13),
    HandlerEntry("api_versions", 18, 0, 4),
    HandlerEntry("init_producer_id", 22, 0, 5),
    # Consumer groups (broker.coordinator.groups).
    HandlerEntry("offset_commit", 8, 2, 9),
    HandlerEntry("offset_fetch", 9, 1, 9),
    HandlerEntry("find_coordinator", 10, 0, 6),
    HandlerEntry("join_group", 11, 2, 9),
    HandlerEntry("heartbeat", 12, 0, 4),
    HandlerEntry("consumer_group_heartbeat", 68, 0, 1),
    HandlerEntry("consumer_group_describe", 69, 0, 1),
    HandlerEntry("leave_group", 13, 0, 5),
    HandlerEntry("sync_group", 14, 0, 5),
    HandlerEntry("describe_groups", 15, 0, 6),
    HandlerEntry("list_groups", 16, 0, 5),
    HandlerEntry("delete_groups", 42, 0, 2),
    HandlerEntry("offset_delete", 47, 0, 0),
    # Consume path: offsets by time, position validation.
    HandlerEntry("list_offsets", 2, 1, 10),
    HandlerEntry("offset_for_leader_epoch", 23, 2, 4),
    # Admin APIs and topic configs.
    HandlerEntry("create_topics", 19, 2, 7),
    HandlerEntry("delete_topics", 20, 1, 6),
    HandlerEntry("delete_records", 21, 0, 2),
    HandlerEntry("create_partitions", 37, 0, 3),
    HandlerEntry("describe_configs", 32, 1, 4),
    HandlerEntry("alter_configs", 33, 0, 2),
    HandlerEntry("incremental_alter_configs", 44, 0, 1),
    HandlerEntry("describe_cluster", 60, 0, 2),
    HandlerEntry("describe_log_dirs", 35, 1, 4),
    HandlerEntry("describe_topic_partitions", 75, 0, 0),
    HandlerEntry("describe_producers", 61, 0, 0),
    # Cluster-admin APIs a single node answers.
    HandlerEntry("elect_leaders", 43, 0, 2),
    HandlerEntry("alter_partition_reassignments", 45, 0, 0),
    HandlerEntry("list_partition_reassignments", 46, 0, 0),
    HandlerEntry("alter_replica_log_dirs", 34, 1, 2),
    HandlerEntry("describe_quorum", 55, 0, 2),
    HandlerEntry("describe_client_quotas", 48, 0, 1),
    HandlerEntry("alter_client_quotas", 49, 0, 1),
    HandlerEntry("describe_user_scram_credentials", 50, 0, 0),
    HandlerEntry("alter_user_scram_credentials", 51, 0, 0),
    # Security: the SASL exchange itself is broker.net.sasl_session's.
    HandlerEntry("sasl_handshake", 17, 0, 1),
    HandlerEntry("sasl_authenticate", 36, 0, 2),
    HandlerEntry("describe_acls", 29, 1, 3),
    HandlerEntry("create_acls", 30, 1, 3),
    HandlerEntry("delete_acls", 31, 1, 3),
    # Transactions (broker.coordinator.transactions).
    HandlerEntry("add_partitions_to_txn", 24, 0, 5),
    HandlerEntry("add_offsets_to_txn", 25, 0, 4),
    HandlerEntry("end_txn", 26, 0, 5),
    HandlerEntry("txn_offset_commit", 28, 0, 5),
    HandlerEntry("write_txn_markers", 27, 1, 1),
    HandlerEntry("describe_transactions", 65, 0, 0),
    HandlerEntry("list_transactions", 66, 0, 1),
    # KIP-932 share groups (broker.coordinator.share), behind the share.version feature.
    HandlerEntry("share_group_heartbeat", 76, 1, 1, None, "share.version"),
    HandlerEntry("share_group_describe", 77, 1, 1, None, "share.version"),
    HandlerEntry("share_fetch", 78, 1, 2, None, "share.version"),
    HandlerEntry("share_acknowledge", 79, 1, 2, None, "share.version"),
    HandlerEntry("describe_share_group_offsets", 90, 0, 1, None, "share.version"),
    HandlerEntry("alter_share_group_offsets", 91, 0, 0, None, "share.version"),
    HandlerEntry("delete_share_group_offsets", 92, 0, 0, None, "share.version"),
    # KIP-1071 streams groups (broker.coordinator.streams), behind the streams.version feature.
    HandlerEntry("streams_group_heartbeat", 88, 0, 1, None, "streams.version"),
    HandlerEntry("streams_group_describe", 89, 0, 1, None, "streams.version"),
)


# What nearly every client asks for soon after its first request (producing, consuming in a
# group, committing, and a test suite's topic admin): imported in the background after the
# first request, so that no first request of these kinds waits for its module. The rest
# (ACLs, quotas, SCRAM, transactions, share groups, cluster admin) load when asked for.
WARM = (
    "metadata",
    "produce",
    "init_producer_id",
    "fetch",
    "list_offsets",
    "find_coordinator",
    "join_group",
    "sync_group",
    "heartbeat",
    "offset_fetch",
    "offset_commit",
    "leave_group",
    "offset_for_leader_epoch",
    "create_topics",
    "delete_topics",
)


def handler_module(entry: HandlerEntry) -> ModuleType:
    return importlib.import_module(f"{__name__}.{entry.module}")


def build_dispatcher() -> Dispatcher:
    dispatcher = Dispatcher()
    for entry in HANDLERS:
        dispatcher.register_lazy(
            entry.key,
            f"{__name__}.{entry.module}",
            entry.min_version,
            entry.max_version,
            entry.advertised_min,
            entry.feature,
        )
    keys = {entry.module: entry.key for entry in HANDLERS}
    dispatcher.warm_after_first([keys[name] for name in WARM])
    return dispatcher
