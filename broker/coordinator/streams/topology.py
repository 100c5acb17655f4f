"""A streams group's topology as its members declare it, and how it stands against the
topics that exist: Kafka's StreamsTopology and InternalTopicManager.configureTopics.

A subtopology has as many tasks as its source (and repartition source) topics have
partitions at most; its changelog topics get that many partitions, and a repartition topic
with no declared count gets its producing subtopology's (here: the topology's largest
source topic count). Missing source topics leave the group NotReady with status
MISSING_SOURCE_TOPICS; missing internal topics are reported as MISSING_INTERNAL_TOPICS and
created by the broker, as Kafka's StreamsGroupHeartbeat handler creates them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.schema import Message

# StreamsGroupHeartbeatResponse.Status codes.
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5


@dataclass
class Configured:
    """The outcome of checking a topology against the topics: tasks per subtopology (empty
    unless ready), statuses, and the internal topics to create (name, partitions, the
    configs the topology gives them)."""

    tasks: dict[str, int] = field(default_factory=dict)
    statuses: list[tuple[int, str]] = field(default_factory=list)
    to_create: list[tuple[str, int, dict[str, str]]] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.statuses


def _configs(info: Message) -> dict[str, str]:
    return {c.key: c.value for c in info.topic_configs}


def configure(topology: Message, partitions_of: Callable[[str], int | None]) -> Configured:
    """Check ``topology`` (a heartbeat's Topology) against the topics ``partitions_of`` knows."""
    out = Configured()
    subtopologies = list(topology.subtopologies)
    missing = sorted(
        {t for s in subtopologies for t in s.source_topics if partitions_of(t) is None}
    )
    if missing:
        out.statuses.append(
            (MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing)} are missing.")
        )
        return out
    widest = max((partitions_of(t) or 0 for s in subtopologies for t in s.source_topics), default=0)
    repartition = {
        info.name: info.partitions or widest
        for s in subtopologies
        for info in s.repartition_source_topics
    }
    tasks: dict[str, int] = {}
    for s in subtopologies:
        counts = [partitions_of(t) or 0 for t in s.source_topics]
        counts += [repartition[i.name] for i in s.repartition_source_topics]
        tasks[s.subtopology_id] = max(counts, default=0)
    wanted = {
        info.name: (repartition[info.name], _configs(info))
        for s in subtopologies
        for info in s.repartition_source_topics
    }
    for s in subtopologies:
        for info in s.state_changelog_topics:
            wanted[info.name] = (info.partitions or tasks[s.subtopology_id], _configs(info))
    absent = [(name, n, c) for name, (n, c) in wanted.items() if partitions_of(name) is None]
    if absent:
        names = ", ".join(sorted(name for name, _, _ in absent))
        out.statuses.append((MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {names}"))
        out.to_create = absent
        return out
    out.tasks = tasks
    return out
