"""How many connections the broker serves, in total and per address (Kafka's ConnectionQuotas).

- ``max.connections`` (broker-wide): when reached, Kafka's Acceptor blocks in
  ConnectionQuotas.inc/waitForConnectionSlot until a connection closes; the new connection
  waits, unread, and so do the ones behind it in the listen backlog. ``wait_for_slot`` is
  that wait.
- ``max.connections.per.ip`` and ``max.connections.per.ip.overrides``: a connection beyond
  its address's limit is accepted and closed at once (TooManyConnectionsException ->
  closeChannel), logged "Rejected connection from ...".
Deviations: no per-listener ``listener.name.<l>.max.connections``, no connection creation
rate quotas (``max.connection.creation.rate``), no protected inter-broker listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket

log = logging.getLogger(__name__)


def _addresses(host: str) -> list[str]:
    """The addresses a host override stands for (Kafka resolves it with getByName)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        log.warning("max.connections.per.ip.overrides: cannot resolve %r (%s)", host, exc)
        return []
    return list(dict.fromkeys(str(ipaddress.ip_address(info[4][0])) for info in infos))


def normalize(address: str) -> str:
    """One spelling per address (an IPv4-mapped IPv6 peer counts as its IPv4 address)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


class ConnectionQuotas:
    def __init__(
        self,
        max_connections: int,
        max_connections_per_ip: int,
        overrides: tuple[tuple[str, int], ...] = (),
    ) -> None:
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self._overrides: dict[str, int] = {}
        for host, count in overrides:
            for address in _addresses(host):
                self._overrides[address] = count
        self._counts: dict[str, int] = {}
        self.total = 0
        self._slot_freed = asyncio.Event()

    def limit_for(self, address: str) -> int:
        return self._overrides.get(address, self.max_connections_per_ip)

    def slot_free(self) -> bool:
        """Whether one more connection may open now (fewer than max.connections are)."""
        return self.total < self.max_connections

    async def wait_for_slot(self) -> None:
        """Return once fewer than max.connections connections are open."""
        while self.total >= self.max_connections:
            self._slot_freed.clear()
            await self._slot_freed.wait()

    async def wait_for_close(self, timeout: float) -> None:
        """Return once a connection closes, or after ``timeout`` seconds."""
        self._slot_freed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._slot_freed.wait(), timeout)

    def try_inc(self, address: str) -> bool:
        """Count a new connection from ``address``; False (not counted) over its limit."""
        count = self._counts.get(address, 0)
        limit = self.limit_for(address)
        if count >= limit:
            log.info(
                "Rejected connection from %s, address already has the configured maximum "
                "of %d connections.",
                address,
                limit,
            )
            return False
        self._counts[address] = count + 1
        self.total += 1
        return True

    def dec(self, address: str) -> None:
        count = self._counts.get(address, 0)
        if count <= 1:
            self._counts.pop(address, None)
        else:
            self._counts[address] = count - 1
        self.total = max(0, self.total - 1)
        self._slot_freed.set()

    def count(self, address: str) -> int:
        return self._counts.get(address, 0)
