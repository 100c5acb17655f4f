"""Incremental fetch sessions (KIP-227), as Kafka 4.0's core/.../server/FetchSession.scala.

A consumer that sends Fetch v7+ with session_id 0 and epoch 0 asks for a session: the broker
remembers the partitions and their fetch parameters under a random id and answers with it.
Later "incremental" requests (that id, epoch 1, 2, ...) list only what changed: partitions
added or updated, and `forgotten_topics_data` to remove; the answer lists only partitions
with something new (records, a moved high watermark or log start offset, an error).

Kafka's rules, kept here:
- FetchManager.newContext: epoch 0 or -1 is a full request (any session it names is closed
  first); -1 makes it sessionless, 0 makes a FullFetchContext that creates a session when the
  answer is built. Any other epoch is incremental: an unknown id gets
  FETCH_SESSION_ID_NOT_FOUND, an epoch other than the session's INVALID_FETCH_SESSION_EPOCH, a
  session created with topic names used at v13+ (or ids below v13)
  FETCH_SESSION_TOPIC_ID_ERROR; these answers carry session id 0 and no partitions. An
  incremental request that leaves the session empty closes it and is answered sessionless.
- IncrementalFetchContext: partitions are read in session order, and a partition that
  returned records moves to the end, so that KIP-74's "first partition with data may exceed
  the limits" rotates over the partitions.
- The epoch is checked again when the answer is built: a request that raced another one on
  the same session gets INVALID_FETCH_SESSION_EPOCH with the session's id.
- The cache (FetchSessionCache): `max.incremental.fetch.session.cache.slots` (1000) split
  over 8 shards (NumFetchSessionCacheShards), new sessions assigned to shards in turn, each
  shard owning one range of ids. A full shard evicts, per FetchSessionCacheShard.tryEvict:
  the least recently used session if unused for more than 120 s
  (MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS); otherwise the smallest session that was
  already older than 120 s when last used, if the new one has more partitions (ties on
  size are broken by id, so equal size never evicts). Otherwise no session is created and
  the answer carries session id 0.
Deviation: an incremental request naming an id outside every shard's range (negative, or
above 8 * (2^31-1) / 8) gets FETCH_SESSION_ID_NOT_FOUND; Kafka fails the lookup with an
index error and answers UNKNOWN_SERVER_ERROR.
Consumers' sessions are never privileged (only followers' are, and there are none here).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from protocol.errors import ErrorCode
from protocol.schema import Message

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 2**31 - 1
NUM_SHARDS = 8  # Kafka's NumFetchSessionCacheShards
EVICTION_MS = 120_000  # KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
ZERO_UUID = b"\x00" * 16
FIRST_TOPIC_ID_VERSION = 13

PartitionKey = tuple[bytes | str | None, int]


def next_epoch(epoch: int) -> int:
    """FetchMetadata.nextEpoch: +1, from INT32_MAX back to 1; FINAL_EPOCH stays."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


@dataclass(frozen=True, slots=True)
class PartitionRef:
    """Kafka's TopicIdPartition: equal by topic id when there is one (v13+), else by name.
    ``topic`` is None for a topic id the broker does not know."""

    topic_id: bytes
    topic: str | None
    index: int

    @property
    def key(self) -> PartitionKey:
        if self.topic_id != ZERO_UUID:
            return (self.topic_id, self.index)
        return (self.topic, self.index)


@dataclass(frozen=True, slots=True)
class PartitionRequest:
    """What a fetch asks of one partition (FetchRequest.PartitionData)."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    log_start_offset: int
    last_fetched_epoch: int = -1


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: the last request parameters and what was last answered."""

    ref: PartitionRef
    request: PartitionRequest
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_respond(self, answer: Message, update: bool) -> bool:
        """CachedPartition.maybeUpdateResponseData: does an incremental answer list it?"""
        respond = len(answer.records) > 0
        if self.high_watermark != answer.high_watermark:
            respond = True
            if update:
                self.high_watermark = answer.high_watermark
        if self.log_start_offset != answer.log_start_offset:
            respond = True
            if update:
                self.log_start_offset = answer.log_start_offset
        if answer.get("preferred_read_replica", -1) != -1:
            respond = True
        if answer.error_code != ErrorCode.NONE:
            # Kafka forgets the high watermark so that the partition is sent again once the
            # error has gone.
            if update:
                self.high_watermark = -1
            respond = True
        diverging = answer.get("diverging_epoch")
        if diverging is not None and diverging.end_offset >= 0:
            respond = True
        return respond


@dataclass(eq=False)
class FetchSession:
    id: int
    privileged: bool
    partitions: dict[PartitionKey, CachedPartition]
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    # The size the cache last saw (FetchSession.cachedSize), -1 while not in the cache, and
    # whether the session is evictable by every new session / by privileged ones only, as
    # decided at its last touch.
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    def update(
        self,
        fetch_data: dict[PartitionKey, tuple[PartitionRef, PartitionRequest]],
        to_forget: Sequence[PartitionRef],
    ) -> None:
        """FetchSession.update: new partitions join at the end, known ones keep their place."""
        for key, (ref, request) in fetch_data.items():
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(ref, request)
            else:
                cached.request = request
        for ref in to_forget:
            self.partitions.pop(ref.key, None)


class _Shard:
    """FetchSessionCacheShard: up to ``max_entries`` sessions with ids in one range."""

    def __init__(
        self, max_entries: int, eviction_ms: int, id_range: int, number: int, rng: random.Random
    ) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.id_range = id_range
        self.number = number
        self.sessions: dict[int, FetchSession] = {}
        self._rng = rng

    def new_session_id(self) -> int:
        low = max(1, self.number * self.id_range)
        high = (self.number + 1) * self.id_range
        while True:
            session_id = self._rng.randrange(low, high)
            if session_id not in self.sessions and session_id != INVALID_SESSION_ID:
                return session_id

    def maybe_create_session(
        self,
        now_ms: int,
        privileged: bool,
        partitions: Sequence[CachedPartition],
        uses_topic_ids: bool,
    ) -> int:
        if len(self.sessions) >= self.max_entries and not self._try_evict(
            privileged, len(partitions), now_ms
        ):
            return INVALID_SESSION_ID
        session = FetchSession(
            id=self.new_session_id(),
            privileged=privileged,
            partitions={p.ref.key: p for p in partitions},
            uses_topic_ids=uses_topic_ids,
            creation_ms=now_ms,
            last_used_ms=now_ms,
            epoch=next_epoch(INITIAL_EPOCH),
        )
        self.sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        if not self.sessions:
            return False
        least_recent = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - least_recent.last_used_ms > self.eviction_ms:
            self.remove(least_recent)
            return True
        candidates = [
            s
            for s in self.sessions.values()
            if (s.evictable_by_privileged if privileged else s.evictable_by_all)
        ]
        if not candidates:
            return False
        # EvictableKey ordering: (privileged, size, id); the new session's id counts as 0.
        weakest = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        if (privileged, size, 0) < (weakest.privileged, weakest.cached_size, weakest.id):
            return False
        self.remove(weakest)
        return True

    def remove(self, session: FetchSession) -> FetchSession | None:
        return self.sessions.pop(session.id, None)

    def touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = not session.privileged or old
        session.evictable_by_all = old


class FetchSessionCache:
    """FetchSessionCache and FetchManager: the broker's sessions and the per-request context."""

    def __init__(
        self,
        max_entries: int,
        *,
        shards: int = NUM_SHARDS,
        eviction_ms: int = EVICTION_MS,
        rng: random.Random | None = None,
    ) -> None:
        rng = rng or random.Random()
        self._id_range = INT32_MAX // shards
        self._shards = [
            _Shard(max_entries // shards, eviction_ms, self._id_range, n, rng)
            for n in range(shards)
        ]
        self._next_shard = 0

    def __len__(self) -> int:
        return sum(len(s.sessions) for s in self._shards)

    def _shard_of(self, session_id: int) -> _Shard | None:
        number = session_id // self._id_range
        return self._shards[number] if 0 <= number < len(self._shards) else None

    def get(self, session_id: int) -> FetchSession | None:
        shard = self._shard_of(session_id)
        return shard.sessions.get(session_id) if shard is not None else None

    def remove(self, session_id: int) -> FetchSession | None:
        shard = self._shard_of(session_id)
        session = shard.sessions.get(session_id) if shard is not None else None
        return shard.remove(session) if shard is not None and session is not None else None

    def touch(self, session: FetchSession, now_ms: int) -> None:
        shard = self._shard_of(session.id)
        if shard is not None:
            shard.touch(session, now_ms)

    def create_session(
        self,
        now_ms: int,
        partitions: Sequence[CachedPartition],
        *,
        uses_topic_ids: bool,
        privileged: bool = False,
    ) -> int:
        """A new session in the next shard in turn; INVALID_SESSION_ID when there is no room."""
        shard = self._shards[self._next_shard % len(self._shards)]
        self._next_shard += 1
        return shard.maybe_create_session(now_ms, privileged, partitions, uses_topic_ids)

    def new_context(
        self,
        version: int,
        session_id: int,
        epoch: int,
        fetch_data: dict[PartitionKey, tuple[PartitionRef, PartitionRequest]],
        to_forget: Sequence[PartitionRef],
        resolve_name: Callable[[bytes], str | None],
        now_ms: int,
    ) -> FetchContext:
        """FetchManager.newContext."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                # Any session named by a full request is closed.
                self.remove(session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessContext(fetch_data)
            return FullContext(self, fetch_data, version >= FIRST_TOPIC_ID_VERSION, now_ms)
        session = self.get(session_id)
        if session is None:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= FIRST_TOPIC_ID_VERSION):
            return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(fetch_data, to_forget)
        if not session.partitions:
            self.remove(session.id)
            return SessionlessContext(fetch_data)
        self.touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        return IncrementalContext(session, epoch, resolve_name)


Answered = list[tuple[PartitionRef, Message]]


@dataclass
class FetchOutcome:
    """The top level of a Fetch answer: error, session id, and the partitions it lists."""

    error: ErrorCode
    session_id: int
    partitions: Answered = field(default_factory=list)


class FetchContext:
    """What one Fetch request reads, and how its answer is cut (Kafka's FetchContext)."""

    def partitions(self) -> Iterator[tuple[PartitionRef, PartitionRequest]]:
        raise NotImplementedError

    def respond(self, answered: Answered) -> FetchOutcome:
        raise NotImplementedError


class SessionErrorContext(FetchContext):
    def __init__(self, error: ErrorCode) -> None:
        self.error = error

    def partitions(self) -> Iterator[tuple[PartitionRef, PartitionRequest]]:
        return iter(())

    def respond(self, answered: Answered) -> FetchOutcome:
        return FetchOutcome(self.error, INVALID_SESSION_ID)


class SessionlessContext(FetchContext):
    def __init__(self, fetch_data: dict[PartitionKey, tuple[PartitionRef, PartitionRequest]]):
        self.fetch_data = fetch_data

    def partitions(self) -> Iterator[tuple[PartitionRef, PartitionRequest]]:
        return iter(self.fetch_data.values())

    def respond(self, answered: Answered) -> FetchOutcome:
        return FetchOutcome(ErrorCode.NONE, INVALID_SESSION_ID, answered)


class FullContext(SessionlessContext):
    """Answers everything and opens a session over the partitions in answer order."""

    def __init__(
        self,
        cache: FetchSessionCache,
        fetch_data: dict[PartitionKey, tuple[PartitionRef, PartitionRequest]],
        uses_topic_ids: bool,
        now_ms: int,
    ) -> None:
        super().__init__(fetch_data)
        self.cache = cache
        self.uses_topic_ids = uses_topic_ids
        self.now_ms = now_ms

    def respond(self, answered: Answered) -> FetchOutcome:
        cached = [
            CachedPartition(
                ref,
                self.fetch_data[ref.key][1],
                high_watermark=answer.high_watermark,
                log_start_offset=answer.log_start_offset,
            )
            for ref, answer in answered
        ]
        session_id = self.cache.create_session(
            self.now_ms, cached, uses_topic_ids=self.uses_topic_ids
        )
        return FetchOutcome(ErrorCode.NONE, session_id, answered)


class IncrementalContext(FetchContext):
    def __init__(
        self,
        session: FetchSession,
        request_epoch: int,
        resolve_name: Callable[[bytes], str | None],
    ) -> None:
        self.session = session
        self.request_epoch = request_epoch
        self.resolve_name = resolve_name

    def partitions(self) -> Iterator[tuple[PartitionRef, PartitionRequest]]:
        for cached in list(self.session.partitions.values()):
            ref = cached.ref
            if self.session.uses_topic_ids and ref.topic is None:
                # A topic id unknown when the partition joined may be known by now.
                name = self.resolve_name(ref.topic_id)
                if name is not None:
                    ref = cached.ref = PartitionRef(ref.topic_id, name, ref.index)
            yield ref, cached.request

    def respond(self, answered: Answered) -> FetchOutcome:
        session = self.session
        if session.epoch != next_epoch(self.request_epoch):
            # Another request on this session was answered in between (a duplicate).
            return FetchOutcome(ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id)
        kept: Answered = []
        for ref, answer in answered:
            cached = session.partitions.get(ref.key)
            if cached is None or not cached.must_respond(answer, update=True):
                continue
            kept.append((ref, answer))
            if len(answer.records) > 0:
                # Partitions that returned data go to the back of the line (KIP-227's
                # rotation, so one busy partition does not starve the others).
                del session.partitions[ref.key]
                session.partitions[ref.key] = cached
        return FetchOutcome(ErrorCode.NONE, session.id, kept)
