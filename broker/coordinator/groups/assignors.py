"""Server-side partition assignors of KIP-848 consumer groups (``group.consumer.assignors``).

Kafka 4.0 ships ``uniform`` (the default, first in the list) and ``range``
(org.apache.kafka.coordinator.group.assignor.UniformAssignor and RangeAssignor). Both see the
members' subscriptions (as topic ids), the partitions per subscribed topic and the current
target assignment, and return a new target assignment for every member.

- ``uniform``: every partition of a subscribed topic goes to one member subscribed to it, the
  counts differ by at most one among members that could take each other's partitions, and a
  member keeps as many of its current partitions as that balance allows (Kafka's
  OptimizedUniformAssignmentBuilder / UniformHeterogeneousAssignmentBuilder: sticky, then
  balanced).
- ``range``: per topic, the members subscribed to it in member-id order take consecutive
  ranges, the first ``partitions % members`` one partition more (Kafka's RangeAssignor, so
  topics with as many partitions are co-partitioned).

Deviation: which partition moves where when several choices are equally balanced differs
from Kafka's builders (they iterate hash maps); clients cannot rely on that choice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

# topic id -> partitions
Assignment = dict[bytes, set[int]]


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    topic_ids: frozenset[bytes]
    # The member's current target assignment (stickiness starts from it).
    current: Mapping[bytes, frozenset[int]]


AssignorFn = Callable[
    [Mapping[str, MemberSubscription], Mapping[bytes, int]], dict[str, Assignment]
]


def uniform(
    members: Mapping[str, MemberSubscription], partitions_per_topic: Mapping[bytes, int]
) -> dict[str, Assignment]:
    order = sorted(members)
    owned: dict[str, list[tuple[bytes, int]]] = {m: [] for m in order}
    taken: set[tuple[bytes, int]] = set()
    # 1. Stickiness: keep what each member had, if it still exists and is still subscribed.
    for member_id in order:
        sub = members[member_id]
        for topic_id, parts in sorted(sub.current.items()):
            count = partitions_per_topic.get(topic_id, 0)
            if topic_id not in sub.topic_ids:
                continue
            for p in sorted(parts):
                if p < count and (topic_id, p) not in taken:
                    taken.add((topic_id, p))
                    owned[member_id].append((topic_id, p))
    # 2. Every partition nobody kept goes to the least loaded member subscribed to its topic.
    subscribers = {
        topic_id: [m for m in order if topic_id in members[m].topic_ids]
        for topic_id in partitions_per_topic
    }
    for topic_id in sorted(partitions_per_topic):
        candidates = subscribers[topic_id]
        if not candidates:
            continue
        for p in range(partitions_per_topic[topic_id]):
            if (topic_id, p) in taken:
                continue
            target = min(candidates, key=lambda m: len(owned[m]))
            owned[target].append((topic_id, p))
            taken.add((topic_id, p))
    # 3. Balance: move from a member to one that could take the partition while their counts
    # differ by more than one.
    moved = True
    while moved:
        moved = False
        for giver in sorted(order, key=lambda m: -len(owned[m])):
            for tp in reversed(owned[giver]):
                takers = [
                    m for m in subscribers.get(tp[0], []) if len(owned[m]) < len(owned[giver]) - 1
                ]
                if takers:
                    taker = min(takers, key=lambda m: len(owned[m]))
                    owned[giver].remove(tp)
                    owned[taker].append(tp)
                    moved = True
                    break
            if moved:
                break
    return {m: _grouped(owned[m]) for m in order}


def range_(
    members: Mapping[str, MemberSubscription], partitions_per_topic: Mapping[bytes, int]
) -> dict[str, Assignment]:
    out: dict[str, Assignment] = {m: {} for m in members}
    for topic_id, count in sorted(partitions_per_topic.items()):
        subscribed = sorted(m for m, sub in members.items() if topic_id in sub.topic_ids)
        if not subscribed:
            continue
        per_member, extra = divmod(count, len(subscribed))
        start = 0
        for i, member_id in enumerate(subscribed):
            size = per_member + (1 if i < extra else 0)
            if size:
                out[member_id][topic_id] = set(range(start, start + size))
            start += size
    return out


def _grouped(partitions: list[tuple[bytes, int]]) -> Assignment:
    out: Assignment = {}
    for topic_id, p in partitions:
        out.setdefault(topic_id, set()).add(p)
    return out


ASSIGNORS: dict[str, AssignorFn] = {"uniform": uniform, "range": range_}
