"""A raw Kafka client over a plain socket, built on this project's protocol descriptions.

Used to craft exactly the requests real clients would not send (bad batches, pipelined
requests, garbage) and to check responses field by field.
"""

from __future__ import annotations

import itertools
import socket
import ssl
import struct
from typing import Any

from protocol import codec
from protocol.header import (
    RequestHeader,
    decode_response_header,
    encode_request_header,
)
from protocol.primitives import Reader
from protocol.schema import Api, Message

# ApiVersions v3+ names the client software (KIP-511); Kafka refuses empty or odd names.
SOFTWARE = Message(client_software_name="minikafka-tests", client_software_version="1.0")


class ConnectionClosed(Exception):
    pass


class RawClient:
    def __init__(
        self,
        port: int,
        host: str = "127.0.0.1",
        client_id: str = "raw-test",
        *,
        receive_buffer: int | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        if receive_buffer is None:
            self.sock = socket.create_connection((host, port), timeout=10)
        else:
            # Set before connecting: the TCP window (and its scale) is agreed at the
            # handshake, so a client that does not read holds the broker's send back early.
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            self.sock.settimeout(10)
            self.sock.connect((host, port))
        if ssl_context is not None:
            self.sock = ssl_context.wrap_socket(self.sock, server_hostname=host)
        self.client_id = client_id
        self._ids = itertools.count(1)
        self.pending: list[tuple[int, Api, int]] = []

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def encode(self, api: Api, version: int, body: Any, correlation_id: int) -> bytes:
        out = bytearray()
        header = RequestHeader(api.key, version, correlation_id, self.client_id)
        encode_request_header(out, header, api.request_header_version(version))
        out += codec.encode_request(api, version, body)
        return struct.pack(">i", len(out)) + bytes(out)

    def send(self, api: Api, version: int, body: Any, *, expect_response: bool = True) -> int:
        correlation_id = next(self._ids)
        self.sock.sendall(self.encode(api, version, body, correlation_id))
        if expect_response:
            self.pending.append((correlation_id, api, version))
        return correlation_id

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read_exact(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionClosed(f"closed after {len(chunks)} of {n} bytes")
            chunks += chunk
        return bytes(chunks)

    def read_frame(self) -> bytes:
        (length,) = struct.unpack(">i", self._read_exact(4))
        return self._read_exact(length)

    def receive(self) -> tuple[int, Message]:
        """Next response; checks it answers the oldest pending request."""
        correlation_id, api, version = self.pending.pop(0)
        frame = self.read_frame()
        reader = Reader(frame)
        got = decode_response_header(reader, api.response_header_version(version))
        assert got == correlation_id, f"response {got} arrived while {correlation_id} was due"
        body = codec.decode(api.response, version, api.is_flexible(version), reader)
        return got, body

    def request(self, api: Api, version: int, body: Any) -> Message:
        self.send(api, version, body)
        return self.receive()[1]

    def bytes_waiting(self) -> int:
        """How many response bytes have arrived and are not read yet (at most 64 KiB)."""
        try:
            return len(self.sock.recv(65536, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except BlockingIOError:
            return 0

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True once the broker has closed the connection (EOF or reset)."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
