"""Placeholder: SASL comes in the next step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.security.settings import SaslSettings
from protocol.codec import Deferred

if TYPE_CHECKING:
    from broker.state import BrokerState


class SaslSession:
    def __init__(self, settings: SaslSettings, state: BrokerState, listener: str) -> None:
        self.settings = settings
        self.authenticated = False
        self.max_receive_size = settings.max_receive_size

    def intercepts(self, frame: bytes) -> bool:
        return False

    async def handle(self, conn: Any, frame: bytes) -> list[bytes | bytearray | Deferred] | None:
        raise NotImplementedError
