"""`minikafka health`: exit 0 only when a broker answers ApiVersions, 1 otherwise, never 2."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from broker.tools import health
from tests.support.broker_process import BrokerProcess


@pytest.fixture(autouse=True)
def no_kafka_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in list(os.environ):
        if var.startswith("KAFKA_") or var == "CLUSTER_ID":
            monkeypatch.delenv(var)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("health") / "data").start()
    yield proc
    assert proc.stop() == 0


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """Accepts connections (the kernel completes the handshake) and never answers."""
    with socket.create_server(("127.0.0.1", 0), backlog=4) as server:
        yield server.getsockname()[1]


def _unused_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port: int = server.getsockname()[1]
    return port


def test_healthy_broker_exits_0_through_the_minikafka_command(broker: BrokerProcess) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "broker", "health", "--bootstrap", broker.bootstrap],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"healthy: {broker.bootstrap} answered ApiVersions")


def test_check_returns_the_number_of_advertised_apis(broker: BrokerProcess) -> None:
    assert health.check("127.0.0.1", broker.port) >= 10


def test_default_address_comes_from_the_kafka_environment(
    broker: BrokerProcess, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As in the image: a wildcard bind is dialled on loopback, not at the advertised name.
    monkeypatch.setenv("KAFKA_LISTENERS", f"PLAINTEXT://0.0.0.0:{broker.port}")
    monkeypatch.setenv("KAFKA_ADVERTISED_LISTENERS", "PLAINTEXT://no-such-host.invalid:19092")
    assert health.main([]) == 0
    assert f"127.0.0.1:{broker.port}" in capsys.readouterr().out


def test_default_address_honours_overrides(
    broker: BrokerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    listeners = f"listeners=INTERNAL://127.0.0.1:{broker.port},EXTERNAL://127.0.0.1:1"
    protocols = "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"
    assert health.main(["--override", listeners, "--override", protocols]) == 0
    capsys.readouterr()


def test_nothing_listening_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert health.main(["--bootstrap", f"127.0.0.1:{_unused_port()}"]) == 1
    assert "unhealthy: cannot talk to" in capsys.readouterr().err


def test_listener_that_never_answers_exits_1_within_the_timeout(
    silent_listener: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A default far above --timeout: ignoring the option would show as waiting a minute.
    monkeypatch.setattr(health, "DEFAULT_TIMEOUT_S", 60.0)
    started = time.monotonic()
    code = health.main(["--bootstrap", f"127.0.0.1:{silent_listener}", "--timeout", "0.5"])
    elapsed = time.monotonic() - started
    assert code == 1
    assert 0.4 < elapsed < 10
    assert f"no answer from 127.0.0.1:{silent_listener} within 0.5 s" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("reply", "match", "named"),
    [
        # An HTTP server, say, answering with text: the "length prefix" is absurd.
        pytest.param(
            b"HTTP/1.1 400 Bad Request\r\n\r\n",
            "bad answer",
            "this looks like HTTP ('HTTP'...), not the Kafka protocol",
            id="http-is-a-bad-answer",
        ),
        # A TLS listener answers a plaintext ApiVersions with an alert record.
        pytest.param(
            b"\x15\x03\x03\x00\x02\x02\x46",
            "this looks like TLS, not plaintext",
            "this looks like TLS, not plaintext",
            id="tls-is-named",
        ),
    ],
)
def test_peer_that_is_not_kafka_is_refused_and_named(reply: bytes, match: str, named: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(reply)

        thread = threading.Thread(target=answer)
        thread.start()
        try:
            with pytest.raises(health.HealthError, match=match) as refused:
                health.check("127.0.0.1", server.getsockname()[1], timeout=5)
            assert named in str(refused.value)
        finally:
            thread.join(5)


@pytest.mark.parametrize(
    ("first_bytes", "said"),
    [
        (b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", "this looks like HTTP ('GET '...)"),
        # A TLS ClientHello's record header: a client configured for SSL.
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(32), "this looks like TLS"),
    ],
    ids=["http", "tls"],
)
def test_another_protocol_on_the_kafka_port_is_named_in_the_log(
    broker: BrokerProcess, first_bytes: bytes, said: str
) -> None:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sock.sendall(first_bytes)
        # The broker closes the connection without an answer.
        assert sock.recv(100) == b""
    line = broker.wait_for_log(f"closing connection from .*{re.escape(said)}")
    assert "frame length" not in line


@pytest.mark.parametrize(
    "args",
    [["--bootstrap", "no-port"], ["--bootstrap", "host:99999"], ["--no-such-flag"]],
    ids=["no-port", "port-out-of-range", "unknown-flag"],
)
def test_bad_arguments_exit_1_never_dockers_reserved_2(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert health.main(args) == 1
    capsys.readouterr()


def test_invalid_configuration_is_unhealthy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KAFKA_LISTENERS", "garbage")
    assert health.main([]) == 1
    assert "listeners" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("broker:9092", ("broker", 9092)),
        ("[::1]:9092", ("::1", 9092)),
        ("PLAINTEXT://localhost:19092", ("localhost", 19092)),
    ],
)
def test_parse_bootstrap(text: str, expected: tuple[str, int]) -> None:
    assert health.parse_bootstrap(text) == expected


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert health.main(["--help"]) == 0
    assert "--bootstrap" in capsys.readouterr().out
