"""Fuzzed handshakes on every kind of listener (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) of
one broker: random bytes, truncated and oversized SASL frames, inside TLS and outside it.
Each connection ends closed or answered, never hung, and every listener keeps serving."""

from __future__ import annotations

import random
import socket
import ssl
import struct
from collections.abc import Iterator

import pytest

from protocol import codec
from protocol.header import RequestHeader, encode_request_header
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.sasl_handshake import SASL_HANDSHAKE
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess, running
from tests.support.certs import Pki
from tests.support.raw_client import RawClient
from tests.support.sasl import PLAIN_JAAS, plain_login

LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@pytest.fixture(scope="module")
def every_listener(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[BrokerProcess]:
    overrides = {
        "listeners": ",".join(f"{name}://127.0.0.1:0" for name in LISTENERS),
        **pki.keystore_settings(),
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
    }
    with running(tmp_path_factory.mktemp("fuzz") / "data", overrides) as proc:
        yield proc


def _connect(broker: BrokerProcess, name: str, pki: Pki) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", broker.ports[name]), timeout=10)
    if name in ("SSL", "SASL_SSL"):
        return pki.client_context().wrap_socket(sock, server_hostname="127.0.0.1")
    return sock


def _drain(sock: socket.socket) -> None:
    """Read until the broker closes or answers and goes quiet; a hang fails the test."""
    sock.settimeout(10)
    try:
        while sock.recv(65536):
            pass
    except (ConnectionResetError, ssl.SSLError):
        pass
    except TimeoutError:
        pytest.fail("the broker neither answered to the end nor closed the connection")


def _inputs(rng: random.Random) -> list[bytes]:
    body = bytearray()
    encode_request_header(body, RequestHeader(SASL_HANDSHAKE.key, 1, 7, "fuzz"), 1)
    body += codec.encode_request(SASL_HANDSHAKE, 1, Message(mechanism="PLAIN"))
    handshake = struct.pack(">i", len(body)) + bytes(body)
    return [
        rng.randbytes(rng.randrange(1, 300)),
        struct.pack(">i", rng.randrange(1, 64)) + rng.randbytes(rng.randrange(0, 64)),
        handshake[: rng.randrange(5, len(handshake))],  # truncated, then EOF
        handshake + struct.pack(">i", 700_000) + b"\x00" * 1024,  # oversized token
        handshake + rng.randbytes(200),
    ]


@pytest.mark.parametrize("name", LISTENERS)
def test_fuzzed_input_on_one_listener_leaves_every_listener_serving(
    every_listener: BrokerProcess, pki: Pki, name: str
) -> None:
    rng = random.Random(f"minikafka-{name}")
    for data in _inputs(rng) * 4:
        with _connect(every_listener, name, pki) as sock:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            _drain(sock)
    # Raw garbage on the TLS ports too, outside TLS.
    if name in ("SSL", "SASL_SSL"):
        with socket.create_connection(("127.0.0.1", every_listener.ports[name])) as sock:
            sock.sendall(rng.randbytes(500))
            _drain(sock)
    for other in LISTENERS:
        context = pki.client_context() if other in ("SSL", "SASL_SSL") else None
        with RawClient(every_listener.ports[other], ssl_context=context) as client:
            if other.startswith("SASL"):
                assert plain_login(client, "admin", "admin-secret").error_code == 0
            assert client.request(API_VERSIONS, 0, Message()).error_code == 0
    assert every_listener.is_running()
