"""How the cost grows with the number of consumer groups: 1 to 1,000 classic groups.

For each size N a fresh broker (minikafka, and Tansu 0.6 beside it unless --no-tansu) gets a
topic of one partition, then N groups of one member each, driven over raw connections by
``WORKERS`` threads (each with its own connection, its share of the groups one after another,
as Kafka answers one request of a connection at a time):

- join: JoinGroup (v5: the member id round trip, then the join), then SyncGroup with the
  leader's assignment, for every group; all N groups' time, as groups per second;
- heartbeats: one Heartbeat per group, ``HEARTBEAT_ROUNDS`` rounds, as heartbeats per second;
- commits: one OffsetCommit per group (its partition, with the member's generation),
  ``COMMIT_ROUNDS`` rounds, as commits per second;
- resident memory (the process and its children) with the N groups stable.

minikafka runs with ``group.initial.rebalance.delay.ms=0`` (Kafka's default, 3 s, would make
every first join wait); Tansu as it ships (Tansu 0.6 holds a new member's JoinGroup for about
the rebalance timeout and then answers its SyncGroup REBALANCE_IN_PROGRESS, so it is reported
as not measured). Growth exponents as in bench.growth.
``python -m bench.growth_groups [--sizes 1,10,100,1000] [--no-tansu]`` writes
bench/results/growth-groups.json and .md and prints the table.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable

from bench.growth import command
from bench.process import BenchBroker
from bench.startup import FramedClient, Spawned, Spawner, broker_env, tree_rss_mb
from protocol.messages.create_topics import CREATE_TOPICS
from protocol.messages.heartbeat import HEARTBEAT
from protocol.messages.join_group import JOIN_GROUP
from protocol.messages.offset_commit import OFFSET_COMMIT
from protocol.messages.sync_group import SYNC_GROUP
from protocol.schema import Message

TOPIC = "grow-groups"
WORKERS = 16
HEARTBEAT_ROUNDS = 3
COMMIT_ROUNDS = 3
MEMBER_ID_REQUIRED = 79
REBALANCE_IN_PROGRESS = 27
JOIN_ATTEMPTS = 5

FIGURES = {
    "joins_per_s": ("groups joined and synced per second", "/s", 0),
    "heartbeats_per_s": ("heartbeats per second", "/s", 0),
    "commits_per_s": ("offset commits per second", "/s", 0),
    "rss_mb": ("resident memory with the groups stable", "MB", 1),
}


def spawn_minikafka() -> Spawned:
    broker = BenchBroker(overrides={"group.initial.rebalance.delay.ms": "0"})
    broker.proc = subprocess.Popen(broker.command(), env=broker_env())
    return Spawned(broker.proc.pid, broker.port, lambda: broker.__exit__(None, None, None))


class Member:
    """One group's only member, as the broker named it."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.member_id = ""
        self.generation = -1

    def join(self, client: FramedClient) -> None:
        """JoinGroup until in the group, then SyncGroup; again from the join while the broker
        answers the sync REBALANCE_IN_PROGRESS (a broker may rebalance once more)."""
        for _ in range(JOIN_ATTEMPTS):
            self._join_group(client)
            synced = client.ask(
                client.frame(
                    SYNC_GROUP,
                    3,
                    Message(
                        group_id=self.group,
                        generation_id=self.generation,
                        member_id=self.member_id,
                        group_instance_id=None,
                        assignments=[Message(member_id=self.member_id, assignment=b"")],
                    ),
                )
            )
            if synced.error_code != REBALANCE_IN_PROGRESS:
                break
        assert synced.error_code == 0, f"SyncGroup answered {synced.error_code}"

    def _join_group(self, client: FramedClient) -> None:
        for _ in range(JOIN_ATTEMPTS):  # v4+: the first JoinGroup only hands out the member id
            answer = client.ask(
                client.frame(
                    JOIN_GROUP,
                    5,
                    Message(
                        group_id=self.group,
                        session_timeout_ms=45_000,
                        rebalance_timeout_ms=60_000,
                        member_id=self.member_id,
                        group_instance_id=None,
                        protocol_type="consumer",
                        protocols=[Message(name="range", metadata=b"")],
                    ),
                )
            )
            self.member_id = answer.member_id
            if answer.error_code != MEMBER_ID_REQUIRED:
                break
        assert answer.error_code == 0, f"JoinGroup answered {answer.error_code}"
        self.generation = answer.generation_id

    def heartbeat(self, client: FramedClient) -> None:
        answer = client.ask(
            client.frame(
                HEARTBEAT,
                3,
                Message(
                    group_id=self.group,
                    generation_id=self.generation,
                    member_id=self.member_id,
                    group_instance_id=None,
                ),
            )
        )
        assert answer.error_code == 0, f"Heartbeat answered {answer.error_code}"

    def commit(self, client: FramedClient, offset: int) -> None:
        answer = client.ask(
            client.frame(
                OFFSET_COMMIT,
                7,
                Message(
                    group_id=self.group,
                    generation_id_or_member_epoch=self.generation,
                    member_id=self.member_id,
                    group_instance_id=None,
                    topics=[
                        Message(
                            name=TOPIC,
                            partitions=[
                                Message(
                                    partition_index=0,
                                    committed_offset=offset,
                                    committed_leader_epoch=-1,
                                    committed_metadata="",
                                )
                            ],
                        )
                    ],
                ),
            )
        )
        codes = {p.error_code for t in answer.topics for p in t.partitions}
        assert codes == {0}, f"OffsetCommit answered {codes}"


def _in_threads(
    clients: list[FramedClient],
    members: list[Member],
    step: Callable[[Member, FramedClient], None],
) -> float:
    """Run ``step`` for every member, each worker thread over its own connection; seconds."""
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            for member in members[index :: len(clients)]:
                step(member, clients[index])
        except BaseException as exc:  # reported after the threads end
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(clients))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - started


def one_size(spawn: Spawner, groups: int) -> dict[str, float]:
    broker = spawn()
    clients = [FramedClient() for _ in range(min(WORKERS, groups))]
    try:
        for client in clients:
            client.connect(broker.port, time.perf_counter() + 60)
            assert client.sock is not None
            client.sock.settimeout(120)
        topic = Message(
            name=TOPIC, num_partitions=1, replication_factor=1, assignments=[], configs=[]
        )
        created = clients[0].ask(
            clients[0].frame(
                CREATE_TOPICS, 5, Message(topics=[topic], timeout_ms=30_000, validate_only=False)
            )
        )
        assert {t.error_code for t in created.topics} == {0}
        # A group first, unmeasured: a broker's first JoinGroup, Heartbeat and OffsetCommit
        # load their handlers and the coordinator (lazily: a plain start does not).
        warm = Member("grow-group-warm")
        warm.join(clients[0])
        warm.heartbeat(clients[0])
        warm.commit(clients[0], 0)
        members = [Member(f"grow-group-{i:05d}") for i in range(groups)]
        join_s = _in_threads(clients, members, lambda m, c: m.join(c))
        beat_s = sum(
            _in_threads(clients, members, lambda m, c: m.heartbeat(c))
            for _ in range(HEARTBEAT_ROUNDS)
        )
        commit_s = sum(
            _in_threads(clients, members, lambda m, c, r=r: m.commit(c, r))
            for r in range(COMMIT_ROUNDS)
        )
        return {
            "joins_per_s": groups / join_s,
            "heartbeats_per_s": groups * HEARTBEAT_ROUNDS / beat_s,
            "commits_per_s": groups * COMMIT_ROUNDS / commit_s,
            "rss_mb": tree_rss_mb(broker.pid),
        }
    finally:
        for client in clients:
            client.close()
        broker.close()


def main(argv: list[str] | None = None) -> int:
    return command(
        argv,
        "growth_groups",
        one_size,
        FIGURES,
        sizes="1,10,100,1000",
        dimension="groups",
        how=f"a fresh broker per size, one member a group, {WORKERS} connections",
        out="growth-groups",
        minikafka=spawn_minikafka,
    )


if __name__ == "__main__":
    raise SystemExit(main())
