"""The HTTP control plane and ``minikafka fault``: loopback only unless configured, a clear
4xx for every bad request, and the broker keeps serving Kafka clients whatever it is sent."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from broker.config import is_loopback
from protocol.messages.api_versions import API_VERSIONS
from tests.support.fault_broker import FaultBroker
from tests.support.produce import batch, create_topic, init_producer, produce
from tests.support.raw_client import SOFTWARE, RawClient


@pytest.fixture(scope="module")
def fb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultBroker]:
    proc = FaultBroker(tmp_path_factory.mktemp("control") / "data").start()
    try:
        yield proc
    finally:
        proc.stop()


def http(fb: FaultBroker, raw: bytes) -> tuple[int, dict[str, object]]:
    """Send raw bytes to the control plane; (status, JSON body) of its answer."""
    url = urlsplit(fb.control_url)
    assert url.hostname is not None and url.port is not None
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(raw)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def post(path: str, body: bytes) -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


BAD_REQUESTS = [
    pytest.param(b"GET /nowhere HTTP/1.1\r\n\r\n", 404, "/v1/", id="unknown-path"),
    pytest.param(post("/v1/error", b"{not json"), 400, "not JSON", id="bad-json"),
    pytest.param(post("/v1/error", b"[1, 2]"), 400, "JSON object", id="not-an-object"),
    pytest.param(post("/v1/explode", b"{}"), 400, "unknown operation", id="unknown-op"),
    pytest.param(
        post("/v1/error", b'{"api": "Produce", "error": 6, "bogus": 1}'),
        400,
        "unknown field(s) bogus",
        id="unknown-field",
    ),
    pytest.param(
        post("/v1/error", b'{"api": "Produce"}'), 400, "missing field(s) error", id="missing"
    ),
    pytest.param(
        post("/v1/error", b'{"api": "NoSuchApi", "error": 6}'), 400, "unknown api", id="bad-api"
    ),
    pytest.param(
        post("/v1/error", b'{"api": "Produce", "error": "NOPE"}'),
        400,
        "unknown error",
        id="bad-error",
    ),
    pytest.param(
        post("/v1/error", b'{"api": "Produce", "error": 6, "count": -3}'),
        400,
        "count must be at least 1",
        id="bad-count",
    ),
    pytest.param(
        post("/v1/delay", b'{"api": "Produce", "delay_ms": "slow"}'),
        400,
        "delay_ms must be an integer",
        id="bad-type",
    ),
    pytest.param(post("/v1/clear", b'{"id": 999999}'), 400, "no fault with id", id="no-such-rule"),
    pytest.param(b"PUT /v1/error HTTP/1.1\r\n\r\n", 405, "not allowed", id="bad-method"),
    pytest.param(b"GET /v1/error HTTP/1.1\r\n\r\n", 405, "use POST", id="get-an-operation"),
    pytest.param(b"hello there\r\n\r\n", 400, "request line", id="not-http"),
    pytest.param(
        b"POST /v1/error HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n",
        413,
        "body above",
        id="huge-body",
    ),
    pytest.param(
        b"POST /v1/error HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        411,
        "Content-Length",
        id="chunked",
    ),
    pytest.param(b"GET /v1/requests HTTP/1.1\r\n\r\n", 400, "request log is off", id="log-off"),
    pytest.param(
        post("/v1/crash-restart", b'{"down_s": -1}'), 400, "down_s must be above 0", id="bad-down"
    ),
]


@pytest.mark.parametrize(("raw", "status", "message"), BAD_REQUESTS)
def test_bad_control_requests_get_a_clear_4xx_and_the_broker_keeps_serving(
    fb: FaultBroker, raw: bytes, status: int, message: str
) -> None:
    got, body = http(fb, raw)
    assert got == status, body
    assert message in str(body["error"])
    assert fb.faults.status()["faults"] == []
    with RawClient(fb.port) as client:
        assert client.request(API_VERSIONS, 3, SOFTWARE).error_code == 0
    assert fb.is_running()


def test_status_names_the_broker_and_the_faults_set(fb: FaultBroker) -> None:
    rule = fb.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2, topic="t")
    try:
        status = fb.faults.status()
        assert status["broker"]["bootstrap"] == fb.bootstrap
        assert status["faults"] == [
            {
                "id": rule,
                "action": "error",
                "api": "Produce",
                "count_left": 2,
                "applied": 0,
                "topic": "t",
                "error": "NOT_LEADER_OR_FOLLOWER",
                "when": "before",
            }
        ]
    finally:
        fb.faults.clear()


def minikafka(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MINIKAFKA_CONTROL_URL"}
    return subprocess.run(
        [sys.executable, "-m", "broker", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_fault_cli_sets_a_fault_that_the_broker_applies(fb: FaultBroker) -> None:
    done = minikafka(
        "fault", "--url", fb.control_url, "error", "--api", "Produce",
        "--error", "NOT_LEADER_OR_FOLLOWER", "--count", "1", "--client-id", "cli-test",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    with RawClient(fb.port, client_id="cli-test") as client:
        create_topic(client, "cli")
        pid = init_producer(client)
        assert produce(client, "cli", batch(pid, 0, 0)).error_code == 6
        assert produce(client, "cli", batch(pid, 0, 0)).error_code == 0


def test_fault_cli_reports_a_refused_request_and_an_unreachable_broker(fb: FaultBroker) -> None:
    refused = minikafka("fault", "--url", fb.control_url, "error", "--api", "Nope", "--error", "6")
    assert refused.returncode == 1
    assert "400" in refused.stderr and "unknown api" in refused.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    gone = minikafka("fault", "--url", f"http://127.0.0.1:{free}", "status")
    assert gone.returncode == 3
    assert "cannot reach" in gone.stderr
    usage = minikafka("fault", "frobnicate")
    assert usage.returncode == 2


def test_control_plane_on_a_non_loopback_address_is_refused_unless_configured(
    tmp_path: Path,
) -> None:
    refused = minikafka(
        "--override", "listeners=PLAINTEXT://127.0.0.1:0",
        "--override", f"log.dirs={tmp_path / 'data'}",
        "--override", "minikafka.control.listener=0.0.0.0:0",
    )  # fmt: skip
    assert refused.returncode == 2
    assert "minikafka.control.listener" in refused.stderr
    assert "minikafka.control.allow.remote=true" in refused.stderr
    assert not (tmp_path / "data").exists()


def test_control_plane_binds_all_interfaces_when_remote_access_is_allowed(
    tmp_path: Path,
) -> None:
    proc = FaultBroker(
        tmp_path / "data",
        {
            "minikafka.control.listener": "0.0.0.0:0",
            "minikafka.control.allow.remote": "true",
        },
    )
    proc.start()
    try:
        assert proc.control_url.startswith("http://0.0.0.0:")
        port = int(proc.control_url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /v1/status HTTP/1.1\r\n\r\n")
            assert sock.recv(64).startswith(b"HTTP/1.1 200")
    finally:
        proc.stop()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
        ("example.com", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
