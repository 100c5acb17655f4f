"""The share groups' SimpleAssignor as Kafka 4.1+ runs it: partitions balanced among members.

As SimpleHomogeneousAssignmentBuilder: with M members and P partitions each partition is
shared by ceil(M / P) members (all of them when there are fewer partitions than members)
and each member gets its share of those assignments, member i
ceil(d * (i + 1)) - ceil(d * i) with d = ceil(M / P) * P / M; sticky: a member keeps what
it had, partitions beyond its count or shared beyond the need are taken back, then the
partitions short of members go round-robin to the members short of partitions. Members
are taken in join order. Members subscribed to different topics (Kafka's heterogeneous
builder) are balanced the same way topic by topic, among the members subscribed to each.
Pure: no state of its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

TopicPartition = tuple[bytes, int]


def balance(
    members: Sequence[str],
    targets: Sequence[TopicPartition],
    current: Mapping[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    """One balanced, sticky assignment of ``targets`` to ``members``."""
    out: dict[str, set[TopicPartition]] = {m: set() for m in members}
    if not members or not targets:
        return out
    count = len(members)
    sharing = (count + len(targets) - 1) // len(targets)
    precise = sharing * len(targets) / count
    desired = {
        m: math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i, m in enumerate(members)
    }
    valid = set(targets)
    holders: dict[TopicPartition, list[str]] = {tp: [] for tp in targets}
    for member in members:
        kept = [tp for tp in sorted(current.get(member, ())) if tp in valid]
        # Over its count: the first ones go (revokeOverfilledMembers).
        for tp in kept[len(kept) - desired[member] :] if len(kept) > desired[member] else kept:
            out[member].add(tp)
            holders[tp].append(member)
    for tp in targets:
        # Shared beyond the need: the first holders give it up (revokeOversharedPartitions).
        while len(holders[tp]) > sharing:
            out[holders[tp].pop(0)].discard(tp)
    unfilled = [m for m in members if len(out[m]) < desired[m]]
    cursor = 0
    for tp in targets:
        if not unfilled:
            break
        tried = 0
        while len(holders[tp]) < sharing and unfilled and tried < len(unfilled):
            member = unfilled[cursor % len(unfilled)]
            if member in holders[tp]:
                cursor += 1
                tried += 1
                continue
            out[member].add(tp)
            holders[tp].append(member)
            tried = 0
            if len(out[member]) >= desired[member]:
                unfilled.remove(member)
            else:
                cursor += 1
    return out


def assign(
    subscriptions: Mapping[str, tuple[str, ...]],
    partitions: Mapping[str, list[TopicPartition]],
    current: Mapping[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    """Every member's partitions. ``subscriptions``: member -> topic names, in join order;
    ``partitions``: topic name -> its (topic id, partition), for topics that exist."""
    members = list(subscriptions)
    topic_sets = {frozenset(t) for t in subscriptions.values()}
    if len(topic_sets) <= 1:
        topics = sorted(next(iter(topic_sets), frozenset()))
        targets = [tp for name in topics for tp in partitions.get(name, [])]
        return balance(members, targets, current)
    out: dict[str, set[TopicPartition]] = {m: set() for m in members}
    for name in sorted({t for topics in subscriptions.values() for t in topics}):
        subscribed = [m for m in members if name in subscriptions[m]]
        targets = partitions.get(name, [])
        held = {m: {tp for tp in current.get(m, ()) if tp in set(targets)} for m in subscribed}
        for member, got in balance(subscribed, targets, held).items():
            out[member] |= got
    return out
