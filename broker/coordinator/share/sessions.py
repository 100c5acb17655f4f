"""Share sessions (KIP-932's share session cache), as Kafka's ShareSessionCache and
SharePartitionManager.newContext.

One session per (group, member): ShareFetch epoch 0 opens it (replacing an old one; no
acknowledgements allowed then, INVALID_REQUEST), each later request must carry the session's
epoch (else INVALID_SHARE_SESSION_EPOCH; no session: SHARE_SESSION_NOT_FOUND) and moves it
on (wrapping past 2^31-1 to 1), -1 closes it, and so does the close of the connection that
opened it (Kafka's ShareSessionCache disconnect listener), releasing the member's records.
The cache holds at most ``capacity`` sessions (Kafka's group.share.max.share.sessions,
default 2000): beyond, SHARE_SESSION_LIMIT_REACHED.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_SHARE_SESSIONS = 2000

# (topic id, partition index)
SharePartitionKey = tuple[bytes, int]


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1
    # The connection that opened it ("host:port"): its close ends the session.
    peer: str = ""
    partitions: dict[SharePartitionKey, None] = field(default_factory=dict)


class SessionError(Exception):
    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 0x7FFFFFFF else epoch + 1


class ShareSessionCache:
    def __init__(self, capacity: int = MAX_SHARE_SESSIONS) -> None:
        self.capacity = capacity
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def open(
        self, group_id: str, member_id: str, parts: list[SharePartitionKey], peer: str = ""
    ) -> ShareSession:
        key = (group_id, member_id)
        self.sessions.pop(key, None)
        if len(self.sessions) >= self.capacity:
            raise SessionError(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
        session = ShareSession(group_id, member_id, peer=peer, partitions=dict.fromkeys(parts))
        self.sessions[key] = session
        return session

    def advance(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        added: list[SharePartitionKey],
        forgotten: list[SharePartitionKey],
    ) -> ShareSession:
        session = self.existing(group_id, member_id, epoch)
        for key in added:
            session.partitions[key] = None
        for key in forgotten:
            session.partitions.pop(key, None)
        session.epoch = next_epoch(session.epoch)
        return session

    def existing(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if epoch != FINAL_EPOCH and session.epoch != epoch:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        return session

    def of_peer(self, peer: str) -> list[ShareSession]:
        return [s for s in self.sessions.values() if s.peer == peer]

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)
