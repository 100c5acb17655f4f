"""Client addresses spelled as Java's InetAddress.getHostAddress(), the text ACL hosts are
compared with."""

from __future__ import annotations

import pytest

from broker.security.client_address import java_host_address


@pytest.mark.parametrize(
    ("python", "java"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "0:0:0:0:0:0:0:1"),
        ("::", "0:0:0:0:0:0:0:0"),
        ("2001:db8::abcd:0:1", "2001:db8:0:0:0:abcd:0:1"),
        ("2001:DB8:0:0:0:0:0:0A", "2001:db8:0:0:0:0:0:a"),
        # A v4 client on a dual-stack socket: Java gives an Inet4Address.
        ("::ffff:10.1.2.3", "10.1.2.3"),
        # IPv4-compatible (not mapped) stays IPv6, as in Java.
        ("::10.1.2.3", "0:0:0:0:0:0:a01:203"),
        ("fe80::1%7", "fe80:0:0:0:0:0:0:1%7"),
        ("?", "?"),
    ],
)
def test_addresses_are_spelled_as_java_does(python: str, java: str) -> None:
    assert java_host_address(python) == java
