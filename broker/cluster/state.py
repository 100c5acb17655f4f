"""The simulated nodes, which of them run, and each partition's leader, epoch and ISR.

A stopped node leaves the ISR of its partitions at once (KRaft fences it and shrinks the
ISRs), and a partition it led elects the first live replica of its ISR with the leader epoch
bumped (ReplicationControlManager's leader election), the log truncated to what the new
leader had; with no live replica in the ISR the
partition has no leader (-1) and keeps its last ISR, as KRaft does without ELR. A node that
starts again takes the leadership of partitions left without one; it rejoins the other ISRs
once its followers caught up (broker.cluster.replication), or at once for a partition nothing
was appended to since the process started (every replica then has the same log).

An isolated node (``isolate``: the zombie leader) is fenced as a stopped one, but its ports
stay open and it answers from the view it had then: the leaders, epochs and ISRs of that
moment, the brokers then alive, a high watermark that no longer moves (its followers stopped
fetching from it). What it appends as a zombie never reaches the partition's log (Kafka
truncates it away when the node rejoins as a follower).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from broker.cluster.placement import replicas_for, seed_of
from broker.cluster.routing import VIEWING_NODE
from broker.config.model import Config, Listener
from protocol.errors import ErrorCode
from storage.partition_log import PartitionLog
from storage.replica_assignment_store import ReplicaAssignmentStore, TopicAssignment

log = logging.getLogger(__name__)

NO_LEADER = -1
# Kafka's offsets.topic.replication.factor and transaction.state.log.replication.factor
# defaults; a smaller cluster gets one replica per node.
INTERNAL_REPLICATION_FACTOR = 3
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
# Kafka's Topic.isInternal: Metadata marks them is_internal, and their partitions' leaders are
# the coordinators' (keyed by name here).
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_TOPIC})


def leadership_key(name: str, topic_id: bytes) -> bytes | str:
    """The key of a topic's partitions in Cluster.partition: an internal topic's name."""
    return name if name in INTERNAL_TOPICS else topic_id


@dataclass(slots=True)
class PartitionState:
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    isr: list[int]
    # Replication (broker.cluster.replication), from the partition's first append on: the
    # leader's log (None until then: every replica has the same log), each follower's log
    # end offset and when it was last caught up (ms), the log end when this leader's epoch
    # began (Partition.leaderEpochStartOffsetOpt).
    log: PartitionLog | None = None
    ends: dict[int, int] = field(default_factory=dict)
    caught_up_ms: dict[int, float] = field(default_factory=dict)
    epoch_start: int = 0
    # Truncations so far: a follower's fetch scheduled before one is void.
    truncations: int = 0
    # An isolated node's view only: the high watermark it serves (it stopped moving) and
    # its own log end, which its zombie appends advance (None: the log has not been
    # appended to since the process started).
    frozen_hw: int | None = None
    zombie_end: int | None = None


@dataclass(slots=True)
class StaleView:
    """What an isolated node still believes: the partitions and live brokers as they were
    when it lost the controller; ``ended`` is set when it rejoins or stops."""

    partitions: dict[tuple[bytes | str, int], PartitionState]
    alive: frozenset[int]
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class UnknownNode(ValueError):
    """A node id that is not one of the cluster's."""


class Cluster:
    def __init__(self, config: Config) -> None:
        first = config.node_id
        self.size = config.cluster_size
        self.node_ids = tuple(range(first, first + self.size))
        racks = config.cluster_racks.split(",") if config.cluster_racks else []
        self.racks: dict[int, str | None] = {
            node: (racks[k].strip() if racks else None) for k, node in enumerate(self.node_ids)
        }
        self.alive: set[int] = set(self.node_ids)
        self.default_replication_factor = min(config.default_replication_factor, self.size)
        # Each internal topic's partition count (offsets.topic.num.partitions,
        # transaction.state.log.num.partitions): the coordinators' partitionFor divides by it.
        self.internal_partitions: dict[str, int] = {
            OFFSETS_TOPIC: config.offsets_topic_num_partitions,
            TRANSACTION_TOPIC: config.transaction_state_log_num_partitions,
        }
        # The internal topics' replication factors (offsets.topic.replication.factor,
        # transaction.state.log.replication.factor), capped at the cluster's size.
        self.internal_replication: dict[str, int] = {
            OFFSETS_TOPIC: min(config.offsets_topic_replication_factor, self.size),
            TRANSACTION_TOPIC: min(config.transaction_state_log_replication_factor, self.size),
        }
        # Replication factors given by CreateTopics, per topic id; other topics get the default.
        self.replication_factors: dict[bytes, int] = {}
        # Manual assignments (CreateTopics, CreatePartitions), per (topic id, partition).
        self.assignments: dict[tuple[bytes, int], tuple[int, ...]] = {}
        # Where both are kept across restarts (None: in memory only, for unit tests).
        self.store: ReplicaAssignmentStore | None = None
        self._partitions: dict[tuple[bytes | str, int], PartitionState] = {}
        # Per listener name, each node's listener as bound (its ports and advertised ports).
        self.listeners: dict[str, list[Listener]] = {}
        # Isolated nodes (ports open, fenced by the controller) and the view each answers from.
        self.isolated: dict[int, StaleView] = {}
        # Whether a partition's topic allows unclean election (unclean.leader.election.enable,
        # the topic's or the broker's); set by the broker.
        self.unclean_allowed: Callable[[bytes | str], bool] = lambda key: False

    def _view(self) -> StaleView | None:
        """The stale view of the isolated node serving the current request, if any."""
        if not self.isolated:
            return None
        return self.isolated.get(VIEWING_NODE.get())

    # -- nodes ---------------------------------------------------------------------------

    def node_of(self, listener: Listener) -> int:
        return self.node_ids[listener.node_index]

    def check_node(self, node: int) -> None:
        if node not in self.racks:
            ids = ", ".join(map(str, self.node_ids))
            raise UnknownNode(f"no node {node} in this cluster (its nodes: {ids})")

    def live_nodes(self) -> list[int]:
        view = self._view()
        alive = self.alive if view is None else view.alive
        return [n for n in self.node_ids if n in alive]

    def endpoint(self, node: int, via: Listener) -> tuple[str, int]:
        """The advertised address of ``node`` on the listener a request came through."""
        listener = self.listeners[via.name][node - self.node_ids[0]]
        return listener.advertised_host, listener.advertised_port

    def random_live_node(self) -> int:
        """Metadata's and DescribeCluster's controller id: KRaftMetadataCache
        .getRandomAliveBrokerId, a live broker picked at random per answer."""
        live = self.live_nodes()
        return random.choice(live) if live else NO_LEADER

    # -- partitions ----------------------------------------------------------------------

    def replication_factor(self, topic_id: bytes) -> int:
        return self.replication_factors.get(topic_id, self.default_replication_factor)

    def load(self, store: ReplicaAssignmentStore, topic_ids: Iterable[bytes]) -> int:
        """Take the assignments kept in ``store`` (from now on written there too), after
        forgetting those of topics no longer in ``topic_ids``; how many were forgotten."""
        self.store = store
        gone = store.remove_except(topic_ids)
        for topic_id, kept in store.all().items():
            self.replication_factors[topic_id] = kept.replication_factor
            for index, replicas in kept.manual.items():
                self.assignments[topic_id, index] = replicas
        self._partitions.clear()
        return gone

    def record_topic(
        self, topic_id: bytes, replication_factor: int, manual: dict[int, tuple[int, ...]]
    ) -> None:
        """A new topic's replication factor and manual assignments (the first replica of each
        the preferred leader), or partitions added to a topic with theirs; durable."""
        self.replication_factors[topic_id] = replication_factor
        for index, replicas in manual.items():
            self.assignments[topic_id, index] = replicas
            self._partitions.pop((topic_id, index), None)
        if self.store is not None:
            kept = {i: r for (t, i), r in self.assignments.items() if t == topic_id}
            self.store.put(topic_id, TopicAssignment(replication_factor, kept))

    def partition(self, key: bytes | str, index: int) -> PartitionState:
        """A topic's partition (key: topic id), or an internal topic's (key: its name); on an
        isolated node, as it saw the partition then."""
        view = self._view()
        if view is not None:
            stale = view.partitions.get((key, index))
            if stale is not None:
                return stale
        found = self._partitions.get((key, index))
        if found is None:
            rf = (
                self.internal_replication.get(key, min(INTERNAL_REPLICATION_FACTOR, self.size))
                if isinstance(key, str)
                else self.replication_factor(key)
            )
            nodes = list(self.node_ids)
            replicas = self.assignments.get((key, index)) if isinstance(key, bytes) else None
            if replicas is None:
                replicas = tuple(
                    replicas_for(index, rf, nodes, [self.racks[n] for n in nodes], seed_of(key))
                )
            live = [n for n in replicas if n in self.alive]
            if live:
                found = PartitionState(replicas, live[0], 0, live)
            else:
                found = PartitionState(replicas, NO_LEADER, 0, [replicas[-1]])
            self._partitions[(key, index)] = found
        return found

    def known(self, key: bytes | str, index: int) -> PartitionState | None:
        """The partition's state if it has one (a deleted topic's has none)."""
        return self._partitions.get((key, index))

    def tracked(self) -> list[tuple[bytes | str, int, PartitionState]]:
        """The partitions replication follows (appended to since the process started)."""
        return [(k, i, p) for (k, i), p in self._partitions.items() if p.log is not None]

    def leader(self, key: bytes | str, index: int) -> int:
        return self.partition(key, index).leader

    def forget_topic(self, topic_id: bytes) -> None:
        if self.store is not None:
            self.store.delete(topic_id)
        self.replication_factors.pop(topic_id, None)
        for assigned in [k for k in self.assignments if k[0] == topic_id]:
            del self.assignments[assigned]
        for key in [k for k in self._partitions if k[0] == topic_id]:
            del self._partitions[key]

    # -- stopping and starting nodes -----------------------------------------------------

    def stop(self, node: int, partitions: Iterable[tuple[bytes | str, int]]) -> None:
        """``node`` stops: it leaves every ISR; the partitions it led elect a new leader."""
        self.check_node(node)
        self.alive.discard(node)
        for key, index in partitions:
            self.partition(key, index)
        for (key, _), part in self._partitions.items():
            if node not in part.isr:
                continue
            if len(part.isr) > 1:
                part.isr.remove(node)
            if part.leader == node:
                live = [n for n in part.isr if n in self.alive]
                if not live and self.unclean_allowed(key):
                    # KRaft's partition change with Election.UNCLEAN: any live replica.
                    live = [n for n in part.replicas if n in self.alive][:1]
                    part.isr = live or part.isr
                part.leader = live[0] if live else NO_LEADER
                part.leader_epoch += 1
                if part.log is not None:
                    _leader_moved(part, node)

    def start(self, node: int) -> None:
        """``node`` runs again: it rejoins the ISRs and leads where no one does."""
        self.check_node(node)
        self.alive.add(node)
        for (key, _), part in self._partitions.items():
            if node not in part.replicas:
                continue
            if part.leader == NO_LEADER:
                # Only a member of the last ISR may lead again, unless the topic allows
                # unclean election (then the ISR is the new leader alone).
                if node not in part.isr:
                    if not self.unclean_allowed(key):
                        continue
                    part.isr = [node]
                part.leader = node
                part.leader_epoch += 1
                if part.log is not None:
                    _leader_moved(part, NO_LEADER)
            if part.log is None:
                # Nothing appended since the process started: its log is everyone's.
                part.isr = [n for n in part.replicas if n in self.alive]

    def elect(self, key: bytes | str, index: int, *, unclean: bool) -> ErrorCode:
        """ElectLeaders for one partition (ReplicationControlManager.electLeader). Preferred:
        the first replica leads if it is alive and in the ISR (ELECTION_NOT_NEEDED when it
        leads already, else PREFERRED_LEADER_NOT_AVAILABLE). Unclean: only for a partition
        with no leader, the first live replica leads alone in the ISR, its log as it is
        (what the last ISR had beyond it is gone); ELIGIBLE_LEADERS_NOT_AVAILABLE when no
        replica is alive. Either bumps the leader epoch."""
        part = self.partition(key, index)
        old = part.leader
        if unclean:
            if old != NO_LEADER:
                return ErrorCode.ELECTION_NOT_NEEDED
            live = [n for n in part.replicas if n in self.alive]
            if not live:
                return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
            part.leader = live[0]
            part.isr = [live[0]]
        else:
            preferred = part.replicas[0]
            if old == preferred:
                return ErrorCode.ELECTION_NOT_NEEDED
            if preferred not in self.alive or preferred not in part.isr:
                return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            part.leader = preferred
        part.leader_epoch += 1
        if part.log is not None:
            _leader_moved(part, old)
        log.info(
            "partition %r-%d: %s election, leader %d -> %d at epoch %d",
            key,
            index,
            "unclean" if unclean else "preferred",
            old,
            part.leader,
            part.leader_epoch,
        )
        return ErrorCode.NONE

    def imbalanced(self) -> list[tuple[bytes | str, int]]:
        """The partitions whose leader is not their preferred replica while it could be
        (alive and in the ISR): what automatic rebalancing elects."""
        return [
            key
            for key, part in self._partitions.items()
            if part.leader != part.replicas[0]
            and part.replicas[0] in self.alive
            and part.replicas[0] in part.isr
        ]

    def offline_replicas(self, part: PartitionState) -> list[int]:
        view = self._view()
        alive = self.alive if view is None else view.alive
        return [n for n in part.replicas if n not in alive]

    # -- isolating a node (the zombie leader) ------------------------------------------------

    def isolate(self, node: int, partitions: Iterable[tuple[bytes | str, int]]) -> None:
        """``node`` loses the controller and its peers: its broker session expires and the
        controller fences it (leaves every ISR, its leaderships move with an epoch bump, as
        ``stop``), while it keeps answering from the view it had (``StaleView``)."""
        self.check_node(node)
        partitions = list(partitions)
        for key, index in partitions:
            self.partition(key, index)
        stale: dict[tuple[bytes | str, int], PartitionState] = {}
        for where, part in self._partitions.items():
            seen = PartitionState(
                part.replicas,
                part.leader,
                part.leader_epoch,
                list(part.isr),
                None,
                copy.copy(part.ends),
                {},
                part.epoch_start,
                part.truncations,
            )
            if part.log is not None:
                seen.frozen_hw = part.log.high_watermark
                seen.zombie_end = part.log.log_end_offset
            stale[where] = seen
        self.isolated[node] = StaleView(stale, frozenset(self.alive))
        self.stop(node, partitions)

    def rejoin(self, node: int) -> bool:
        """An isolated node reaches the controller again: its stale view ends (what it
        appended as a zombie is gone, truncated to its new leader's log) and it runs as a
        started node. False if it was not isolated."""
        view = self.isolated.pop(node, None)
        if view is None:
            return False
        view.ended.set()
        self.start(node)
        return True

    def drop_isolation(self, node: int) -> None:
        """An isolated node stops: its view ends, it stays stopped."""
        view = self.isolated.pop(node, None)
        if view is not None:
            view.ended.set()


def _leader_moved(part: PartitionState, old: int) -> None:
    """A new leader (or none) for a replicated partition: its log is what it had, so the one
    log kept is truncated to the new leader's end (records acknowledged with acks=1 or 0
    beyond it are gone, as in Kafka: the other replicas truncate to the leader's log), and
    the followers' ends with it; the stopped old leader had all of it."""
    plog = part.log
    assert plog is not None
    end = plog.log_end_offset
    if old != NO_LEADER:
        part.ends[old] = end
    if part.leader == NO_LEADER:
        return
    kept = part.ends.pop(part.leader, end)
    if kept < end:
        try:
            plog.truncate_to(kept)
        except OSError as exc:
            log.exception("%s: truncation to %d failed", plog, kept)
            plog.go_offline(f"truncation failed: {exc}")
        end = plog.log_end_offset
        part.truncations += 1
        part.ends = {n: min(e, end) for n, e in part.ends.items()}
    part.epoch_start = end
