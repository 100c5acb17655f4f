"""/metrics: the broker's state and counters as Prometheus families, named as the Prometheus
JMX exporter's Kafka rules name Kafka's MBeans (lowercased ``kafka_<domain>_<type>_<name>``,
meters' counts as ``_total``, MBean keys as labels), and consumer lag as kafka_exporter
publishes it (``kafka_consumergroup_lag{consumergroup,topic,partition}``).

``visible`` decides which topics and groups may be named in labels (the console's principal
may DESCRIBE them); totals without a topic label are the broker's whole.

Thousands of partitions make hundreds of kilobytes of samples: they are read on the loop
``SLICE`` partitions (or committed offsets) at a time, the loop taking its other work in
between, and the text is written by the server off the loop (broker.console.server).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection

from broker.cluster.state import NO_LEADER, OFFSETS_TOPIC, TRANSACTION_TOPIC
from broker.console.exposition import Family
from broker.core.metrics import LATENCY_BUCKETS_MS
from broker.core.state import BrokerState

Visible = Callable[[str, str], bool]  # (resource kind "topic" | "group", name)

# Partitions (or committed offsets) read between two turns of the loop's other work.
SLICE = 200


async def collect(
    state: BrokerState,
    api_names: dict[int, str],
    visible: Visible,
    faulted: Collection[tuple[str, int]] = (),
) -> list[Family]:
    """``faulted``: partitions the fault injector holds offline (broker.toolkit.faults)."""
    families: list[Family] = []
    families += _topic_metrics(state, visible)
    families += _request_metrics(state, api_names)
    families += await _partition_metrics(state, visible, faulted)
    families += await _group_metrics(state, visible)
    return families


def _topic_metrics(state: BrokerState, visible: Visible) -> list[Family]:
    metrics = state.metrics
    total = metrics.total
    out = []
    for attr, name, text in (
        ("messages_in", "messagesin", "Records appended (BrokerTopicMetrics MessagesInPerSec)."),
        ("bytes_in", "bytesin", "Record batch bytes appended (BytesInPerSec)."),
        ("bytes_out", "bytesout", "Record bytes sent in Fetch answers (BytesOutPerSec)."),
    ):
        family = Family(f"kafka_server_brokertopicmetrics_{name}_total", "counter", text)
        family.add(getattr(total, attr))
        for topic, counters in sorted(metrics.topics.items()):
            if visible("topic", topic):
                family.add(getattr(counters, attr), topic=topic)
        out.append(family)
    return out


def _request_metrics(state: BrokerState, api_names: dict[int, str]) -> list[Family]:
    requests = Family(
        "kafka_network_requestmetrics_requests_total",
        "counter",
        "Requests answered per API (RequestMetrics RequestsPerSec).",
    )
    times = Family(
        "kafka_network_requestmetrics_totaltimems",
        "histogram",
        "Time from a request's header read to its answer, in ms (RequestMetrics TotalTimeMs).",
    )
    for key, counts in sorted(state.metrics.requests.items()):
        name = api_names.get(key, str(key))
        for version, count in enumerate(counts.versions):
            if count:
                requests.add(count, request=name, version=str(version))
        times.add_histogram(LATENCY_BUCKETS_MS, counts.buckets, counts.seconds * 1000, request=name)
    purgatory = Family(
        "kafka_server_delayedoperationpurgatory_purgatorysize",
        "gauge",
        "Requests parked, once per partition they wait on (DelayedOperationPurgatory).",
    )
    purgatory.add(state.fetch_purgatory.size(), delayedOperation="Fetch")
    purgatory.add(_produce_waits(state), delayedOperation="Produce")
    connections = Family(
        "kafka_server_socket_server_metrics_connection_count",
        "gauge",
        "Client connections open (socket-server-metrics connection-count).",
    )
    connections.add(len(state.connections))
    return [requests, times, purgatory, connections]


def _produce_waits(state: BrokerState) -> int:
    """acks=all appends waiting for their ISR (broker.cluster.replication, Kafka's
    DelayedProduce), once per partition as Kafka watches one under each partition's key.
    A single broker has none: its only replica is the leader, so an acks=all append is
    complete at once, as Kafka's tryCompleteElseWatch completes it without watching."""
    replication = state.replication
    if replication is None:
        return 0
    return replication.waiting_appends()


async def _partition_metrics(
    state: BrokerState, visible: Visible, faulted: Collection[tuple[str, int]]
) -> list[Family]:
    size = Family("kafka_log_log_size", "gauge", "Bytes of a partition's segments (Log Size).")
    start = Family("kafka_log_log_logstartoffset", "gauge", "A partition's log start offset.")
    end = Family("kafka_log_log_logendoffset", "gauge", "A partition's log end offset.")
    segments = Family("kafka_log_log_numlogsegments", "gauge", "A partition's segments.")
    partitions = Family(
        "kafka_topic_partitions", "gauge", "Partitions of a topic (kafka_exporter)."
    )
    # Summed over a simulated cluster's nodes, as a dashboard sums the brokers' (Kafka's
    # Partition: under-replicated and under min ISR count at the leader only).
    count = led = offline = under_replicated = under_min_isr = read = 0
    cluster, replication = state.cluster, state.replication
    for info in sorted(state.store.topics(), key=lambda t: t.name):
        if read >= SLICE:
            read = 0
            await asyncio.sleep(0)
            if state.store.topic(info.name) is not info:
                continue  # deleted meanwhile
        logs = list(info.partitions)
        read += len(logs)
        for plog in logs:
            leaderless = plog.offline is not None or (info.name, plog.partition) in faulted
            if cluster is None:
                count += 1
            else:
                # Internal topics' partitions are keyed by name (their coordinators' too).
                internal = info.name in (OFFSETS_TOPIC, TRANSACTION_TOPIC)
                part = cluster.partition(info.name if internal else info.topic_id, plog.partition)
                count += len(part.replicas)
                leaderless = leaderless or part.leader == NO_LEADER
                if not leaderless:
                    under_replicated += len(part.isr) < len(part.replicas)
                    if replication is not None:
                        under_min_isr += replication.under_min_isr(part, plog)
            offline += leaderless
            led += not leaderless
        if not visible("topic", info.name):
            continue
        partitions.add(len(logs), topic=info.name)
        for plog in logs:
            labels = {"topic": info.name, "partition": str(plog.partition)}
            size.add(plog.size, **labels)
            start.add(plog.log_start_offset, **labels)
            end.add(plog.log_end_offset, **labels)
            segments.add(len(plog.segments), **labels)
    families = [size, start, end, segments, partitions]
    for name, value, text in (
        ("partitioncount", count, "Partition replicas on this broker (its nodes)."),
        ("leadercount", led, "Partitions led by this broker (its nodes)."),
        ("underreplicatedpartitions", under_replicated, "Led partitions with a short ISR."),
        ("underminisrpartitioncount", under_min_isr, "Led partitions below min.insync.replicas."),
    ):
        family = Family(f"kafka_server_replicamanager_{name}", "gauge", text)
        family.add(value)
        families.append(family)
    offline_family = Family(
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "gauge",
        "Partitions without a leader: a storage error until a restart, the offline fault, "
        "or every replica in the ISR stopped.",
    )
    offline_family.add(offline)
    families.append(offline_family)
    return families


async def _group_metrics(state: BrokerState, visible: Visible) -> list[Family]:
    coordinator = state.groups
    classic = coordinator.list_groups()
    consumer = list(coordinator.consumer.groups.values())
    groups = Family(
        "kafka_coordinator_group_groupmetadatamanager_numgroups",
        "gauge",
        "Consumer groups, classic and KIP-848 (GroupMetadataManager NumGroups).",
    )
    groups.add(len(classic) + len(consumer))
    # Kafka's group-coordinator-metrics: group-count per protocol, consumer-group-count per
    # state of the KIP-848 groups (ConsumerGroupState's names).
    by_protocol = Family(
        "kafka_server_group_coordinator_metrics_group_count",
        "gauge",
        "Groups per rebalance protocol (group-coordinator-metrics group-count).",
    )
    by_protocol.add(len(classic), protocol="classic")
    by_protocol.add(len(consumer), protocol="consumer")
    by_state = Family(
        "kafka_server_group_coordinator_metrics_consumer_group_count",
        "gauge",
        "KIP-848 consumer groups per state (group-coordinator-metrics consumer-group-count).",
    )
    states = [g.state.value for g in consumer]
    for state_name in ("Empty", "Assigning", "Reconciling", "Stable", "Dead"):
        by_state.add(states.count(state_name), state=state_name)

    current = Family(
        "kafka_consumergroup_current_offset",
        "gauge",
        "A group's committed offset of a partition (kafka_exporter).",
    )
    lag = Family(
        "kafka_consumergroup_lag",
        "gauge",
        "Log end offset minus the group's committed offset (kafka_exporter).",
    )
    store = coordinator.store
    names = sorted(set(store.groups()) | set(store.consumer_groups()))
    read = 0
    for group in names:
        if read >= SLICE:
            read = 0
            await asyncio.sleep(0)
        if not visible("group", group):
            continue
        offsets = sorted(store.offsets(group).items())
        read += len(offsets) + 1
        for (topic, partition), committed in offsets:
            plog = state.store.partition(topic, partition)
            if plog is None or not visible("topic", topic):
                continue
            labels = {"consumergroup": group, "topic": topic, "partition": str(partition)}
            current.add(committed.offset, **labels)
            lag.add(max(plog.high_watermark - committed.offset, 0), **labels)
    return [groups, by_protocol, by_state, current, lag]
