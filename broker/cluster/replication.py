"""Replication in a simulated cluster: each follower's log end offset, the high watermark,
ISR shrink and expand, and acks=all waiting for the ISR (Kafka's Partition, ReplicaManager).

One physical log is kept per partition, the leader's (storage.partition_log); a follower is
the offset it has fetched up to. A follower only ever copies its leader, so its log is a
prefix of the leader's and the offset says all of it. Followers on running nodes fetch what
the leader appended ``delay_ms`` later (the replication-delay fault; 0: at once, in the
append's own step); a stopped node's followers stop where they were. When the leader moves,
the log is truncated to the new leader's end (broker.cluster.state), as the other replicas
truncate to the new leader's log in Kafka.

As Partition does: the high watermark is the least log end offset over the ISR and does not
advance while the ISR is below min.insync.replicas (maybeIncrementLeaderHW, isUnderMinIsr,
capped at the replication factor: effectiveMinIsr); a follower joins the ISR once its log end
reaches the high watermark and the start of the leader's epoch (isFollowerInSync), and a
follower of a running node leaves it when it has not been caught up for
replica.lag.time.max.ms (maybeShrinkIsr, checked every half of it as the isr-expiration
task); an acks=all append answers once the high watermark passed it, with
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR is below min.insync.replicas by then, or
NOT_LEADER_OR_FOLLOWER when the leader moved (DelayedProduce, checkEnoughReplicasReachOffset).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from broker.cluster.state import NO_LEADER, Cluster, PartitionState
from protocol.errors import ErrorCode
from storage.partition_log import PartitionLog

log = logging.getLogger(__name__)

_Key = tuple[bytes | str, int]


@dataclass(slots=True)
class _Waiter:
    """An acks=all append waiting for the high watermark to pass ``required``."""

    required: int
    node: int
    log: PartitionLog
    future: asyncio.Future[ErrorCode]


class Replication:
    def __init__(
        self,
        cluster: Cluster,
        *,
        lag_time_max_ms: int,
        min_isr: Callable[[PartitionLog], int],
        wake: Callable[[PartitionLog], object],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        # How long followers trail their leader (the replication-delay fault).
        self.delay_ms = 0
        self.lag_time_max_ms = lag_time_max_ms
        # The topic's min.insync.replicas, read when the high watermark may move.
        self._min_isr = min_isr
        # Wakes the fetches parked on a partition whose high watermark moved.
        self._wake = wake
        self._clock = clock
        self._waiters: dict[_Key, list[_Waiter]] = {}
        # acks=all appends waiting on an isolated (zombie) leader.
        self._zombie_waits = 0

    def _now_ms(self) -> float:
        return self._clock() * 1000

    # -- appends -------------------------------------------------------------------------

    def track(self, topic_id: bytes, index: int, plog: PartitionLog) -> PartitionState:
        """Before the leader appends: from the first append on, the partition's followers are
        followed; until then every replica has the log as it is (it was all committed)."""
        part = self.cluster.partition(topic_id, index)
        if part.log is not plog:
            end = plog.log_end_offset
            now = self._now_ms()
            part.log = plog
            part.ends = {n: end for n in part.replicas if n != part.leader}
            part.caught_up_ms = dict.fromkeys(part.replicas, now)
            part.epoch_start = end
            plog.set_high_watermark(end)
            return part
        # A follower fetching continuously is caught up until the leader's log grows
        # (Replica.updateFetchStateOrThrow: its fetch reached the leader's end).
        leo = plog.log_end_offset
        now = self._now_ms()
        for node, end in part.ends.items():
            if end >= leo and node in self.cluster.alive:
                part.caught_up_ms[node] = now
        return part

    def appended(self, topic_id: bytes, index: int, plog: PartitionLog) -> None:
        """The leader appended: its followers fetch it after the delay."""
        part = self.track(topic_id, index, plog)
        end = plog.log_end_offset
        now = self._now_ms()
        if self.delay_ms <= 0:
            self._fetched((topic_id, index), plog, part.truncations, end, now)
        else:
            loop = asyncio.get_running_loop()
            args = ((topic_id, index), plog, part.truncations, end, now)
            loop.call_later(self.delay_ms / 1000, self._fetched, *args)
            self._advance((topic_id, index), part)

    def _fetched(
        self, key: _Key, plog: PartitionLog, truncations: int, end: int, appended_ms: float
    ) -> None:
        """The running followers now have the leader's log up to ``end``, which was the
        leader's log end at ``appended_ms`` (Replica.updateFetchStateOrThrow's caught-up
        time: a fetch reaching the leader's end then means caught up as of then)."""
        part = self.cluster.known(*key)
        if part is None or part.log is not plog or part.leader == NO_LEADER:
            return
        if part.truncations != truncations:
            return  # fetched from a log that has been truncated since
        leo = plog.log_end_offset
        now = self._now_ms()
        for node in part.replicas:
            if node == part.leader or node not in self.cluster.alive:
                continue
            have = max(part.ends.get(node, 0), min(end, leo))
            part.ends[node] = have
            caught_up = now if have >= leo else appended_ms
            part.caught_up_ms[node] = max(part.caught_up_ms.get(node, 0.0), caught_up)
        self._advance(key, part)

    # -- the high watermark and the ISR ----------------------------------------------------

    def _effective_min_isr(self, part: PartitionState, plog: PartitionLog) -> int:
        return min(self._min_isr(plog), len(part.replicas))

    def _advance(self, key: _Key, part: PartitionState) -> None:
        """Expand the ISR with caught-up followers, move the high watermark, answer the
        acks=all appends it now covers."""
        plog = part.log
        if plog is None or part.leader == NO_LEADER:
            self._complete(key, part)
            return
        # The high watermark first (a shrunk ISR moves it), then the followers that reach it
        # join (Partition.maybeExpandIsr: the ISR grows at its end); they hold it no lower.
        leo = plog.log_end_offset
        hw = plog.high_watermark
        if len(part.isr) >= self._effective_min_isr(part, plog):
            new = min([leo, *(part.ends.get(n, leo) for n in part.isr if n != part.leader)])
            if new > hw:
                hw = new
                plog.set_high_watermark(new)
                self._wake(plog)
        for node in part.replicas:
            if node == part.leader or node in part.isr or node not in self.cluster.alive:
                continue
            end = part.ends.get(node, -1)
            if end >= hw and end >= part.epoch_start:
                part.isr.append(node)
                log.info("%s: node %d caught up at %d, ISR now %s", plog, node, end, part.isr)
        self._complete(key, part)

    def shrink_lagging(self) -> None:
        """Partition.maybeShrinkIsr: followers not caught up within replica.lag.time.max.ms
        leave the ISR (the leader stays)."""
        now = self._now_ms()
        for key, index, part in self.cluster.tracked():
            plog = part.log
            if plog is None or part.leader == NO_LEADER:
                continue
            leo = plog.log_end_offset
            lagging = [
                n
                for n in part.isr
                if n != part.leader
                and part.ends.get(n, leo) < leo
                and now - part.caught_up_ms.get(n, now) > self.lag_time_max_ms
            ]
            if lagging:
                part.isr = [n for n in part.isr if n not in lagging]
                log.info("%s: nodes %s fell behind, ISR now %s", plog, lagging, part.isr)
                self._advance((key, index), part)

    def refresh(self) -> None:
        """After nodes stopped or started: the high watermarks and the waiting appends."""
        for key, index, part in self.cluster.tracked():
            self._advance((key, index), part)

    def node_started(self, node: int) -> None:
        """A node runs again: its followers fetch what their leaders have, after the delay."""
        now = self._now_ms()
        loop = asyncio.get_running_loop()
        for key, index, part in self.cluster.tracked():
            plog = part.log
            if plog is None or node not in part.replicas or node == part.leader:
                continue
            args = ((key, index), plog, part.truncations, plog.log_end_offset, now)
            if self.delay_ms <= 0:
                self._fetched(*args)
            else:
                loop.call_later(self.delay_ms / 1000, self._fetched, *args)

    def high_watermark_on(self, node: int, part: PartitionState, plog: PartitionLog) -> int:
        """The high watermark a node serves: the leader's, a follower's no further than its
        own log end (it learns the leader's with its fetches)."""
        hw = plog.high_watermark
        if part.frozen_hw is not None:
            return min(hw, part.frozen_hw)  # an isolated node's, which stopped moving
        if node == part.leader or part.log is not plog:
            return hw
        return min(hw, part.ends.get(node, hw))

    # -- acks=all ------------------------------------------------------------------------

    async def acknowledged(
        self,
        topic_id: bytes,
        index: int,
        plog: PartitionLog,
        required: int,
        node: int,
        timeout_ms: int,
    ) -> ErrorCode:
        """Once the ISR has the log up to ``required``: NONE (or
        NOT_ENOUGH_REPLICAS_AFTER_APPEND); REQUEST_TIMED_OUT after ``timeout_ms``."""
        key = (topic_id, index)
        zombie = self.cluster.isolated.get(node)
        if zombie is not None:
            # An isolated leader's followers never fetch again: DelayedProduce expires, or
            # completes NOT_LEADER_OR_FOLLOWER when the node rejoins as a follower.
            self._zombie_waits += 1
            try:
                await asyncio.wait_for(zombie.ended.wait(), max(timeout_ms, 0) / 1000)
            except TimeoutError:
                return ErrorCode.REQUEST_TIMED_OUT
            finally:
                self._zombie_waits -= 1
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        verdict = self._verdict(key, plog, required, node)
        if verdict is not None:
            return verdict
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(required, node, plog, future)
        self._waiters.setdefault(key, []).append(waiter)
        try:
            return await asyncio.wait_for(future, max(timeout_ms, 0) / 1000)
        except TimeoutError:
            return ErrorCode.REQUEST_TIMED_OUT
        finally:
            waiting = self._waiters.get(key)
            if waiting is not None and waiter in waiting:
                waiting.remove(waiter)
                if not waiting:
                    del self._waiters[key]

    def waiting_appends(self) -> int:
        """acks=all appends waiting for their ISR now (Kafka's produce purgatory size)."""
        return self._zombie_waits + sum(len(waiting) for waiting in self._waiters.values())

    def _verdict(self, key: _Key, plog: PartitionLog, required: int, node: int) -> ErrorCode | None:
        part = self.cluster.known(*key)
        if part is None or part.log is not plog or part.leader != node:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if plog.high_watermark < required:
            return None
        if len(part.isr) < self._effective_min_isr(part, plog):
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    def _complete(self, key: _Key, part: PartitionState) -> None:
        for waiter in list(self._waiters.get(key, ())):
            verdict = self._verdict(key, waiter.log, waiter.required, waiter.node)
            if verdict is not None and not waiter.future.done():
                waiter.future.set_result(verdict)

    def forget_topic(self, topic_id: bytes) -> None:
        """A deleted topic's waiting appends answer now (its partitions have no leader)."""
        for key in [k for k in self._waiters if k[0] == topic_id]:
            for waiter in self._waiters[key]:
                if not waiter.future.done():
                    waiter.future.set_result(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def under_min_isr(self, part: PartitionState, plog: PartitionLog) -> bool:
        """Partition.appendRecordsToLeader's check before an acks=all append."""
        return len(part.isr) < self._effective_min_isr(part, plog)
