"""The client's address as Kafka spells it: Java's InetAddress.getHostAddress().

ACL hosts are compared as strings with this spelling (StandardAuthorizerData matches the
ACL's host against ``clientAddress().getHostAddress()``), so an ACL copied from Kafka must
meet the same text here:

- IPv6 in full, no zero compression, hex groups without leading zeros, lower case:
  ``::1`` is ``0:0:0:0:0:0:0:1``; a scoped (link-local) address keeps its numeric scope id
  after ``%``, as an accepted Java socket has no interface name, only the id.
- An IPv4-mapped IPv6 address (a v4 client on a dual-stack listener) is its IPv4 address:
  Java hands such a peer over as an Inet4Address, so ``::ffff:10.0.0.1`` is ``10.0.0.1``.
"""

from __future__ import annotations

import functools
import ipaddress
import socket


@functools.lru_cache(maxsize=1024)
def java_host_address(host: str) -> str:
    """``host`` as the socket reports it (Python's spelling) -> Java's getHostAddress()."""
    address, _, zone = host.partition("%")
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return host  # not an IP address (a Unix socket, "?"): nothing to respell
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    text = ":".join(f"{int.from_bytes(ip.packed[i : i + 2], 'big'):x}" for i in range(0, 16, 2))
    if zone:
        text += f"%{_scope_id(zone)}"
    return text


def _scope_id(zone: str) -> str:
    if zone.isdigit():
        return zone
    try:
        return str(socket.if_nametoindex(zone))
    except OSError:
        return zone
