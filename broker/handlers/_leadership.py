"""A simulated cluster's partitions as handlers answer them: Metadata-style partition
entries, the leader check of the requests only a partition's leader serves, and which node
coordinates a group or a transactional id."""

from __future__ import annotations

from collections.abc import Callable

from broker.cluster.routing import REQUEST_NODE
from broker.cluster.state import (
    NO_LEADER,
    OFFSETS_TOPIC,
    TRANSACTION_TOPIC,
    Cluster,
    leadership_key,
)
from broker.coordinator.transactions import partition_for
from broker.core.request_context import RequestContext
from protocol.errors import ErrorCode
from protocol.schema import Message
from storage.partition_log import PartitionLog


def partition_entry(cluster: Cluster, key: bytes | str, index: int) -> Message:
    """One partition as Metadata and DescribeTopicPartitions list it (KRaftMetadataCache
    .partitionMetadata): no leader -> LEADER_NOT_AVAILABLE with leader -1."""
    part = cluster.partition(key, index)
    return Message(
        error_code=ErrorCode.NONE if part.leader != NO_LEADER else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=index,
        leader_id=part.leader,
        leader_epoch=part.leader_epoch,
        replica_nodes=list(part.replicas),
        isr_nodes=list(part.isr),
        eligible_leader_replicas=[],
        last_known_elr=[],
        offline_replicas=cluster.offline_replicas(part),
    )


def broker_entries(ctx: RequestContext, cluster: Cluster) -> list[Message]:
    """The live nodes, as Metadata lists brokers (node_id, host, port, rack)."""
    entries = []
    for node in cluster.live_nodes():
        host, port = cluster.endpoint(node, ctx.listener)
        entries.append(Message(node_id=node, host=host, port=port, rack=cluster.racks[node]))
    return entries


def misdirected(ctx: RequestContext, cluster: Cluster, topic_id: bytes, index: int) -> int | None:
    """The partition's leader when this request's node is not it, else None."""
    leader = cluster.leader(topic_id, index)
    return None if leader == cluster.node_of(ctx.listener) else leader


def current_leader(cluster: Cluster, topic_id: bytes | str, index: int) -> Message:
    """KIP-951's CurrentLeader of a partition (leader -1 and epoch -1 when it has none)."""
    part = cluster.partition(topic_id, index)
    if part.leader == NO_LEADER:
        return Message(leader_id=-1, leader_epoch=-1)
    return Message(leader_id=part.leader, leader_epoch=part.leader_epoch)


def node_endpoints(ctx: RequestContext, cluster: Cluster, leaders: set[int]) -> list[Message]:
    """KIP-951's NodeEndpoints: the address of each leader named in CurrentLeader."""
    endpoints = []
    for node in sorted(leaders):
        if node == NO_LEADER or node not in cluster.alive:
            continue
        host, port = cluster.endpoint(node, ctx.listener)
        endpoints.append(Message(node_id=node, host=host, port=port, rack=cluster.racks[node]))
    return endpoints


def served_here(
    ctx: RequestContext, cluster: Cluster, topic: str, index: int, *, replica_ok: bool
) -> int | None:
    """The partition's leader epoch when this node may serve it, else None (answer
    NOT_LEADER_OR_FOLLOWER). ``replica_ok``: a follower serves it too (Fetch v11+ from a
    consumer, KIP-392: FetchParams.fetchOnlyLeader is false once a client sends its metadata)."""
    info = ctx.state.store.topic(topic)
    if info is None:
        return None
    part = cluster.partition(leadership_key(info.name, info.topic_id), index)
    node = cluster.node_of(ctx.listener)
    if node == part.leader or (replica_ok and node in part.isr):
        return part.leader_epoch
    return None


def epoch_end(plog: PartitionLog, epoch: int, current: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor from the batches' leader epochs: (the largest epoch
    at or below ``epoch`` that wrote, or ``epoch``; the first offset of a later epoch, or the
    log end). After a truncation on failover, where a follower's log diverged."""
    if epoch >= current:
        return current, plog.log_end_offset
    found = epoch
    for header in plog.headers(plog.log_start_offset):
        if header.partition_leader_epoch > epoch:
            return found, header.base_offset
        found = header.partition_leader_epoch
    return found, plog.log_end_offset


def topic_id_of(ctx: RequestContext, topic: str) -> bytes | str:
    """The key of the topic's partitions in Cluster.partition (an internal topic's name)."""
    info = ctx.state.store.topic(topic)
    return b"" if info is None else leadership_key(info.name, info.topic_id)


def with_field(message: Message, name: str, value: object) -> Message:
    """``message`` with one more field (a tagged field added after it was built)."""
    message.__dict__[name] = value
    return message


# FindCoordinator's key types.
GROUP_KEY, TRANSACTION_KEY = 0, 1


def coordinator_node(cluster: Cluster, key_type: int, key: str) -> int:
    """The leader of the key's partition of __consumer_offsets or __transaction_state
    (partitionFor: abs(hashCode) % the topic's partition count); the coordinators move with
    those leaders."""
    topic = OFFSETS_TOPIC if key_type == GROUP_KEY else TRANSACTION_TOPIC
    return cluster.leader(topic, partition_for(key, cluster.internal_partitions[topic]))


def not_coordinator(ctx: RequestContext, cluster: Cluster, key_type: int, key: str) -> bool:
    """A coordinator request reached a node that does not coordinate ``key``."""
    return coordinator_node(cluster, key_type, key) != cluster.node_of(ctx.listener)


def group_elsewhere(cluster: Cluster) -> Callable[[str], bool]:
    """The group coordinator's routing check (its ``elsewhere``)."""

    def elsewhere(group_id: str) -> bool:
        node = REQUEST_NODE.get()
        return node >= 0 and coordinator_node(cluster, GROUP_KEY, group_id) != node

    return elsewhere


def request_node(ctx: RequestContext) -> int:
    """The id of the node the request reached: a simulated cluster's node, else this
    broker's."""
    cluster = ctx.state.cluster
    return ctx.state.node_id if cluster is None else cluster.node_of(ctx.listener)


def node_static_configs(ctx: RequestContext, node: int) -> dict[str, str]:
    """The start-up settings of a simulated cluster's node that are its own, as each Kafka
    broker's server.properties sets them: node.id (broker.id its synonym) and broker.rack
    (minikafka.cluster.racks). Empty for a single broker (its settings are the process's)."""
    cluster = ctx.state.cluster
    if cluster is None:
        return {}
    own = {"node.id": str(node), "broker.id": str(node)}
    rack = cluster.racks.get(node)
    if rack is not None:
        own["broker.rack"] = rack
    return own
