"""One share-partition: which records of a topic partition a share group has delivered.

As Kafka's SharePartition: records between the start offset (SPSO) and the end offset
(SPEO, the next offset never acquired) are in flight, each AVAILABLE (to be delivered
again), ACQUIRED by one member until its lock's deadline, ACKNOWLEDGED or ARCHIVED. A fetch
acquires available records first, then new ones from the log, at most
``max_in_flight`` (group.share.partition.max.record.locks) past the start offset. Each
acquisition counts a delivery; a record released (RELEASE, an expired lock, a member that
left) becomes available again, or archived once its deliveries reached the limit
(group.share.delivery.count.limit). The start offset moves past acknowledged and archived
records. Deviation: states are kept per record in memory (persisted as Kafka's state batches by
storage.share_state_store).
Pure and synchronous; times are monotonic milliseconds passed in.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from protocol.errors import ErrorCode
from storage.share_state_store import ShareState, StateBatch


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(enum.IntEnum):
    """AcknowledgeTypes values (ShareFetch/ShareAcknowledge; RENEW from v2, KIP-1222)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int = 0
    member_id: str = ""
    deadline_ms: int = 0


@dataclass(frozen=True, slots=True)
class Acquired:
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    first_offset: int
    last_offset: int
    # One type for the whole range, or one per offset.
    types: tuple[int, ...]


class SharePartition:
    def __init__(self, start_offset: int, delivery_limit: int, max_in_flight: int) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.delivery_limit = delivery_limit
        self.max_in_flight = max_in_flight
        self.records: dict[int, InFlight] = {}
        # Moves on every change of state, so the coordinator knows what to persist.
        self.changes = 0
        # Whether the state was written as Kafka writes it: by an acknowledgement, a release
        # (lock timeout, a member gone) or AlterShareGroupOffsets; not by acquiring. Before
        # that Kafka's persisted start offset is uninitialized (-1): DescribeShareGroupOffsets
        # answers so, and after a restart the start offset is chosen again.
        self.reported = False

    # -- persistence (storage.share_state_store) -----------------------------------------

    def snapshot(self) -> ShareState:
        """The state to keep, as Kafka's state batches: a record a member holds is kept as
        available with its delivery count (delivered again after a restart)."""
        batches: list[StateBatch] = []
        for offset in sorted(self.records):
            record = self.records[offset]
            state = RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
            last = batches[-1] if batches else None
            if (
                last is not None
                and last.last_offset == offset - 1
                and last.state == state
                and last.delivery_count == record.delivery_count
            ):
                batches[-1] = StateBatch(last.first_offset, offset, state, record.delivery_count)
            else:
                batches.append(StateBatch(offset, offset, state, record.delivery_count))
        return ShareState(self.start_offset, self.end_offset, tuple(batches))

    @classmethod
    def restored(cls, state: ShareState, delivery_limit: int, max_in_flight: int) -> SharePartition:
        part = cls(state.start_offset, delivery_limit, max_in_flight)
        part.reported = True
        part.end_offset = max(state.end_offset, state.start_offset)
        for batch in state.batches:
            kind = RecordState(batch.state)
            for offset in range(
                max(batch.first_offset, part.start_offset),
                min(batch.last_offset, part.end_offset - 1) + 1,
            ):
                part.records[offset] = InFlight(kind, batch.delivery_count)
        # Offsets in flight with no batch were never written: available, never delivered.
        for offset in range(part.start_offset, part.end_offset):
            part.records.setdefault(offset, InFlight(RecordState.AVAILABLE))
        part._advance_start()
        return part

    # -- locks ---------------------------------------------------------------------------

    def expire_locks(self, now_ms: int) -> bool:
        """Release the records whose acquisition lock ran out (Kafka's AcquisitionLockTimerTask);
        True when any became available."""
        released = False
        for record in self.records.values():
            if record.state is RecordState.ACQUIRED and record.deadline_ms <= now_ms:
                released |= self._release(record)
                self.changes += 1
                self.reported = True
        self._advance_start()
        return released

    def next_deadline(self) -> int | None:
        deadlines = [
            r.deadline_ms for r in self.records.values() if r.state is RecordState.ACQUIRED
        ]
        return min(deadlines) if deadlines else None

    def release_member(self, member_id: str) -> bool:
        """A member left or its share session closed: what it holds goes back (Kafka's
        SharePartition.releaseAcquiredRecords)."""
        released = False
        for record in self.records.values():
            if record.state is RecordState.ACQUIRED and record.member_id == member_id:
                released |= self._release(record)
                self.changes += 1
                self.reported = True
        self._advance_start()
        return released

    def _release(self, record: InFlight) -> bool:
        record.member_id = ""
        if record.delivery_count >= self.delivery_limit:
            record.state = RecordState.ARCHIVED
            return False
        record.state = RecordState.AVAILABLE
        return True

    # -- acquiring -----------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        max_records: int,
        log_end: int,
        skipped: Iterable[int],
        now_ms: int,
        lock_ms: int,
        below: int | None = None,
    ) -> list[Acquired]:
        """Acquire up to ``max_records`` for ``member_id``: available records first, then new
        ones below ``log_end`` (the high watermark), all below ``below`` (the end of the
        bytes the fetch may send). ``skipped``: offsets below ``log_end`` from the end
        offset on that hold no data record (control batches), archived at once as Kafka
        never delivers them."""
        self.expire_locks(now_ms)
        bound = log_end if below is None else min(log_end, below)
        taken: list[int] = []
        for offset in sorted(self.records):
            if len(taken) >= max_records or offset >= bound:
                break
            record = self.records[offset]
            if record.state is RecordState.AVAILABLE:
                self._take(record, member_id, now_ms + lock_ms)
                taken.append(offset)
        skip = set(skipped)
        while (
            len(taken) < max_records
            and self.end_offset < bound
            and self.end_offset - self.start_offset < self.max_in_flight
        ):
            offset = self.end_offset
            self.end_offset += 1
            if offset in skip:
                self.records[offset] = InFlight(RecordState.ARCHIVED)
                continue
            record = InFlight(RecordState.AVAILABLE)
            self.records[offset] = record
            self._take(record, member_id, now_ms + lock_ms)
            taken.append(offset)
        self._advance_start()
        if taken:
            self.changes += 1
        return list(self._runs(sorted(taken)))

    @staticmethod
    def _take(record: InFlight, member_id: str, deadline_ms: int) -> None:
        record.state = RecordState.ACQUIRED
        record.delivery_count += 1
        record.member_id = member_id
        record.deadline_ms = deadline_ms

    def _runs(self, offsets: list[int]) -> Iterator[Acquired]:
        """Contiguous offsets with one delivery count, as AcquiredRecords entries."""
        start = 0
        for i in range(1, len(offsets) + 1):
            if (
                i == len(offsets)
                or offsets[i] != offsets[i - 1] + 1
                or self.records[offsets[i]].delivery_count
                != self.records[offsets[start]].delivery_count
            ):
                yield Acquired(
                    offsets[start], offsets[i - 1], self.records[offsets[start]].delivery_count
                )
                start = i

    # -- acknowledging -------------------------------------------------------------------

    def acknowledge(
        self, member_id: str, batches: list[AckBatch], now_ms: int, lock_ms: int
    ) -> ErrorCode:
        """Apply a member's acknowledgements, all or none: every offset named from the start
        offset on must be acquired by this member (else INVALID_RECORD_STATE, as
        SharePartition.acknowledge answers for a record not acquired or acquired by another
        member)."""
        self.expire_locks(now_ms)
        plan: list[tuple[InFlight, int]] = []
        for batch in batches:
            # Offsets below the start offset are already acknowledged or archived: skipped,
            # as SharePartition.acknowledge skips them.
            for offset in range(max(batch.first_offset, self.start_offset), batch.last_offset + 1):
                record = self.records.get(offset)
                if (
                    record is None
                    or record.state is not RecordState.ACQUIRED
                    or record.member_id != member_id
                ):
                    return ErrorCode.INVALID_RECORD_STATE
                kind = (
                    batch.types[0]
                    if len(batch.types) == 1
                    else batch.types[offset - batch.first_offset]
                )
                plan.append((record, kind))
        for record, kind in plan:
            if kind == AckType.ACCEPT:
                record.state = RecordState.ACKNOWLEDGED
                record.member_id = ""
            elif kind == AckType.RELEASE:
                self._release(record)
            elif kind == AckType.RENEW:
                record.deadline_ms = now_ms + lock_ms
            else:  # REJECT and GAP: never delivered again
                record.state = RecordState.ARCHIVED
                record.member_id = ""
        self._advance_start()
        self.changes += 1
        self.reported = True
        return ErrorCode.NONE

    def _advance_start(self) -> None:
        records = self.records
        while self.start_offset < self.end_offset:
            record = records.get(self.start_offset)
            if record is None or record.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                records.pop(self.start_offset, None)
                self.start_offset += 1
            else:
                break

    def first_candidate(self, now_ms: int) -> int:
        """Where the next acquisition starts: the first available record, else the end."""
        self.expire_locks(now_ms)
        available = [o for o, r in self.records.items() if r.state is RecordState.AVAILABLE]
        return min(available, default=self.end_offset)

    def delivery_complete_count(self) -> int:
        """Records past the start offset already acknowledged or archived (Kafka's
        deliveryCompleteCount, taken off the lag)."""
        return sum(
            r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
            for r in self.records.values()
        )

    def has_available(self) -> bool:
        return any(r.state is RecordState.AVAILABLE for r in self.records.values())

    def move_start(self, log_start: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) leave the share-partition."""
        while self.start_offset < log_start:
            self.records.pop(self.start_offset, None)
            self.start_offset += 1
            self.changes += 1
        self.end_offset = max(self.end_offset, self.start_offset)
