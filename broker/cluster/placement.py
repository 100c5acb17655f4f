"""Where a partition's replicas go: Kafka's rack-aware round robin.

The rules are AdminUtils.assignReplicasToBrokers' (which KRaft's StripedReplicaPlacer keeps in
spirit): leaders stripe across the nodes from a start index, each follower is shifted from its
leader by a per-round shift, and with racks the nodes are listed alternating racks and no two
replicas share a rack while an unused rack remains. Kafka draws the start index and the shift
at random per creation; here they come from the topic's id, so a partition's replicas are a
function of (topic, partition, nodes) and need no file of their own.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence


def seed_of(key: bytes | str) -> tuple[int, int]:
    """The start index and replica shift for a topic (its id, or an internal topic's name)."""
    raw = key.encode() if isinstance(key, str) else key
    digest = zlib.crc32(raw)
    return digest & 0xFFFF, digest >> 16


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(nodes: Sequence[int], racks: Sequence[str | None]) -> list[int]:
    """The nodes listed one rack after another (AdminUtils.getRackAlternatedBrokerList)."""
    by_rack: dict[str, list[int]] = {}
    for node, rack in sorted(zip(nodes, racks, strict=True)):
        by_rack.setdefault(rack or "", []).append(node)
    order = sorted(by_rack)
    result: list[int] = []
    depth = max(len(v) for v in by_rack.values())
    for i in range(depth):
        result.extend(by_rack[r][i] for r in order if i < len(by_rack[r]))
    return result


def replicas_for(
    partition: int,
    replication_factor: int,
    nodes: Sequence[int],
    racks: Sequence[str | None],
    seed: tuple[int, int],
) -> list[int]:
    """The replicas of one partition, preferred leader first."""
    n = len(nodes)
    if not 1 <= replication_factor <= n:
        raise ValueError(f"replication factor {replication_factor} with {n} node(s)")
    rack_aware = any(r is not None for r in racks)
    ordered = rack_alternated(nodes, racks) if rack_aware else sorted(nodes)
    start, shift0 = seed[0] % n, seed[1] % n
    # Each full round of partitions moves the followers one further (nextReplicaShift).
    shift = shift0 + (partition // n if partition > 0 else 0)
    first = (partition + start) % n
    replicas = [ordered[first]]
    if replication_factor == 1:
        return replicas
    if not rack_aware:
        for j in range(replication_factor - 1):
            replicas.append(ordered[_replica_index(first, shift, j, n)])
        return replicas
    rack_of = dict(zip(nodes, racks, strict=True))
    rack_count = len({r or "" for r in racks})
    used_racks = {rack_of[replicas[0]] or ""}
    k = 0
    while len(replicas) < replication_factor:
        candidate = ordered[_replica_index(first, shift, k, n)]
        k += 1
        rack = rack_of[candidate] or ""
        # A rack gets a second replica only once every rack has one; a node never two.
        if candidate in replicas or (rack in used_racks and len(used_racks) < rack_count):
            continue
        replicas.append(candidate)
        used_racks.add(rack)
    return replicas
