"""Mutated real-client frames never crash a handler, hang the broker or disturb others.

Each golden request frame (captured from kafka-python, confluent-kafka and aiokafka) is
sent with a few seeded random byte flips, truncations or extensions, each on its own
connection. The broker must answer or close the connection, never raise out of a handler
("handler failed" in its log means an unexpected exception), and must keep serving.
"""

from __future__ import annotations

import random
import socket
import struct
from pathlib import Path

from protocol.messages.api_versions import API_VERSIONS
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import SOFTWARE, RawClient

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
MUTATIONS_PER_FRAME = 60


def mutate(frame: bytes, rng: random.Random) -> bytes:
    data = bytearray(frame)
    kind = rng.randrange(4)
    if kind == 0:  # flip a few bytes after the fixed header fields
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(8, len(data)) if len(data) > 8 else 0
            data[pos] = rng.randrange(256)
    elif kind == 1:  # truncate the body (the frame length says so: a short request)
        data = data[: rng.randrange(8, len(data))] if len(data) > 8 else data
    elif kind == 2:  # trailing garbage
        data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    else:  # a large length or count planted somewhere
        pos = rng.randrange(8, max(len(data) - 4, 9))
        data[pos : pos + 4] = struct.pack(">i", rng.choice([-2, 0x7FFFFFFF, 0x10000000]))
    return bytes(data)


def answer_or_close(port: int, frame: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        sock.shutdown(socket.SHUT_WR)
        # Read until the broker closes: after our EOF it answers what it can, then closes.
        while sock.recv(65536):
            pass


def test_mutated_client_frames_are_answered_or_refused(broker: BrokerProcess) -> None:
    frames = sorted(GOLDEN.glob("*/*.bin"))
    assert len(frames) >= 20
    rng = random.Random(20261122)
    sent = 0
    for path in frames:
        frame = path.read_bytes()
        for _ in range(MUTATIONS_PER_FRAME):
            answer_or_close(broker.port, mutate(frame, rng))
            sent += 1
    assert sent == len(frames) * MUTATIONS_PER_FRAME
    with RawClient(broker.port) as client:
        assert client.request(API_VERSIONS, 3, SOFTWARE).error_code == 0
    log = broker.log_text()
    assert "handler failed" not in log and "Traceback" not in log, log[-4000:]
    assert broker.is_running()
