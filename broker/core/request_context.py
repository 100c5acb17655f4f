"""What a handler knows of the request it serves: header, listener, peer, principal and the
broker state, with the authorization check every handler calls."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.security.client_address import java_host_address
from broker.security.principal import ANONYMOUS, KafkaPrincipal
from protocol.header import RequestHeader

if TYPE_CHECKING:
    from broker.config.model import Listener
    from broker.core.state import BrokerState


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    listener: Listener
    peer: str
    state: BrokerState
    # Who the connection authenticated as (TLS client certificate or SASL).
    principal: KafkaPrincipal = ANONYMOUS
    # Pipelined Produce (broker.net.connection): done once the connection's previous request
    # is; the handler appends only after it, so effects keep the connection's order.
    after: asyncio.Future[None] | None = None
    # Set by the Produce handler when its batch checks went to a validation worker process:
    # the connection pipelines a producer's next requests only then (broker.net.connection).
    offloaded: bool = False

    def authorized(
        self, operation: int, resource_type: int, name: str, *, log_denied: bool = True
    ) -> bool:
        """May this request's principal do ``operation`` on the resource? Always, without
        an authorizer (Kafka's AuthHelper.authorize)."""
        authorizer = self.state.authorizer
        return authorizer is None or authorizer.authorize(
            str(self.principal), self.host, operation, resource_type, name, log_denied=log_denied
        )

    @property
    def host(self) -> str:
        """The client's address without the port, spelled as Java does (ACL hosts are
        compared with that text)."""
        return java_host_address(self.peer.rsplit(":", 1)[0])

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    def describe(self) -> str:
        """Who sent this, for log lines about rejected input."""
        return (
            f"peer={self.peer} client_id={self.header.client_id!r} "
            f"correlation_id={self.header.correlation_id}"
        )
