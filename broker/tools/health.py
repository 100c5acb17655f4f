"""`minikafka health`: is a broker answering the Kafka protocol? Exit 0 if so, 1 if not.

    minikafka health [server.properties] [--override NAME=VALUE]... [--bootstrap HOST:PORT]
                     [--timeout SECONDS]

Made for container health checks (the image's HEALTHCHECK, a compose ``healthcheck``):
an open port proves little, so this does what every Kafka client does first, an
ApiVersions round trip, and calls the broker healthy only when a well-formed answer with
error code 0 comes back within the timeout. A broker still recovering its log has not
bound its listeners yet, so it reads as unhealthy until it can serve.

Without ``--bootstrap`` the address comes from the same sources as the broker's own
configuration (properties file, ``KAFKA_*`` environment, ``--override``): the first
listener's bind address and port (a wildcard bind is dialled on loopback), so
``127.0.0.1:9092`` by default. Not the advertised address: a health check runs next to the
broker, where the address told to clients often does not lead back (``docker run -p
19092:9092`` advertising ``localhost:19092`` has nothing on 19092 inside the container).

Exit status is only ever 0 or 1: Docker reserves 2 for health checks, so a configuration
that cannot be read is reported as unhealthy (1) with the reason on stderr.
Plain blocking sockets on purpose: one request, no event loop needed, starts fast.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
import time
from collections.abc import Sequence

from broker.config.loader import load_config
from broker.config.model import ConfigError
from protocol import codec
from protocol.errors import ErrorCode
from protocol.frame import check_length
from protocol.header import RequestHeader, decode_response_header, encode_request_header
from protocol.messages.api_versions import API_VERSIONS
from protocol.primitives import Reader
from protocol.schema import Message

__all__ = ["HealthError", "check", "main", "parse_bootstrap"]

HEALTHY, UNHEALTHY = 0, 1
DEFAULT_TIMEOUT_S = 2.0
# v3 is what librdkafka sends first; every Kafka since 2.4 (and this broker) serves it.
_VERSION = 3
_CORRELATION_ID = 1
# An ApiVersions answer is a few hundred bytes; anything near this is not a Kafka broker.
_MAX_RESPONSE_BYTES = 1024 * 1024


class HealthError(Exception):
    """The broker did not answer as a healthy Kafka broker does; the message says why."""


def parse_bootstrap(text: str) -> tuple[str, int]:
    """``host:port`` or ``[v6-address]:port`` (a ``NAME://`` prefix is tolerated)."""
    address = text.strip().rpartition("://")[2]
    host, sep, port_text = address.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) <= 65535:
        raise ValueError(f"expected host:port, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    data = bytearray()
    while len(data) < n:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        sock.settimeout(remaining)
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise HealthError(f"connection closed after {len(data)} of {n} bytes")
        data += chunk
    return bytes(data)


def check(host: str, port: int, timeout: float = DEFAULT_TIMEOUT_S) -> int:
    """One ApiVersions round trip; returns how many APIs the broker advertised.

    Raises HealthError (also for timeouts and socket errors) when the broker is not healthy.
    """
    deadline = time.monotonic() + timeout
    request = bytearray()
    header = RequestHeader(API_VERSIONS.key, _VERSION, _CORRELATION_ID, "minikafka-health")
    encode_request_header(request, header, API_VERSIONS.request_header_version(_VERSION))
    request += codec.encode_request(
        API_VERSIONS,
        _VERSION,
        Message(client_software_name="minikafka-health", client_software_version="1"),
    )
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.sendall(struct.pack(">i", len(request)) + request)
            (length,) = struct.unpack(">i", _recv_exact(sock, 4, deadline))
            check_length(length, _MAX_RESPONSE_BYTES)
            reader = Reader(_recv_exact(sock, length, deadline))
    except TimeoutError:
        raise HealthError(f"no answer from {host}:{port} within {timeout:g} s") from None
    except OSError as exc:
        raise HealthError(f"cannot talk to {host}:{port}: {exc}") from None
    except ValueError as exc:  # FrameError
        raise HealthError(f"bad answer from {host}:{port}: {exc}") from None
    try:
        # ApiVersions answers always carry response header v0 (KIP-511).
        correlation_id = decode_response_header(reader, API_VERSIONS.response_header_version(0))
        if correlation_id != _CORRELATION_ID:
            raise HealthError(f"answer for correlation id {correlation_id}, not {_CORRELATION_ID}")
        body = codec.decode(
            API_VERSIONS.response, _VERSION, API_VERSIONS.is_flexible(_VERSION), reader
        )
    except HealthError:
        raise
    except ValueError as exc:  # DecodeError, or an UNSUPPORTED_VERSION v0-format body
        raise HealthError(f"undecodable ApiVersions answer from {host}:{port}: {exc}") from None
    if body.error_code != ErrorCode.NONE:
        raise HealthError(f"ApiVersions answered with error code {body.error_code}")
    if not body.api_keys:
        raise HealthError("ApiVersions answered with no APIs")
    return len(body.api_keys)


def _default_address(ns: argparse.Namespace) -> tuple[str, int]:
    config, _warnings, _sources = load_config(ns.properties_file, os.environ, ns.override)
    first = config.listeners[0]
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(first.host, first.host)
    return host, first.port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minikafka health",
        description="Exit 0 when a Kafka broker answers an ApiVersions request, 1 otherwise.",
    )
    parser.add_argument("properties_file", nargs="?", metavar="server.properties")
    parser.add_argument(
        "--override", action="append", default=[], metavar="NAME=VALUE", help="as for minikafka"
    )
    parser.add_argument(
        "--bootstrap",
        metavar="HOST:PORT",
        help="broker to check (default: the first listener's bind address, loopback if wildcard)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up after this long (default {DEFAULT_TIMEOUT_S:g})",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        ns = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error: unhealthy, never Docker's 2
        return HEALTHY if exc.code == 0 else UNHEALTHY
    try:
        host, port = parse_bootstrap(ns.bootstrap) if ns.bootstrap else _default_address(ns)
    except (ValueError, ConfigError) as exc:  # a broker that cannot be configured is unhealthy
        print(f"minikafka health: {exc}", file=sys.stderr)
        return UNHEALTHY
    started = time.monotonic()
    try:
        apis = check(host, port, ns.timeout)
    except HealthError as exc:
        print(f"unhealthy: {exc}", file=sys.stderr)
        return UNHEALTHY
    elapsed_ms = (time.monotonic() - started) * 1000
    print(f"healthy: {host}:{port} answered ApiVersions ({apis} APIs) in {elapsed_ms:.0f} ms")
    return HEALTHY


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
