"""The HTTP control plane and ``minikafka fault``: loopback only unless configured, only its
own clients (Host, Origin, token, JSON bodies: nothing a web page can send), a clear 4xx for
every bad request, and the broker keeps serving Kafka clients whatever it is sent."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
import urllib.error
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from broker.config.listeners import is_loopback
from broker.toolkit.embedded import ThreadedBroker
from broker.toolkit.fault_cli import FaultClient
from protocol.messages.api_versions import API_VERSIONS
from tests.support.fault_broker import FaultBroker
from tests.support.polling import until_sync
from tests.support.produce import batch, create_topic, init_producer, produce
from tests.support.raw_client import SOFTWARE, RawClient


@pytest.fixture(scope="module")
def fb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultBroker]:
    proc = FaultBroker(tmp_path_factory.mktemp("control") / "data").start()
    try:
        yield proc
    finally:
        proc.stop()


def http(fb: FaultBroker, raw: bytes, sign: bool = True) -> tuple[int, dict[str, object]]:
    """Send raw bytes to the control plane (``sign``: with the Host, token and, on a POST,
    Content-Type its own clients send); (status, JSON body) of its answer."""
    url = urlsplit(fb.control_url)
    assert url.hostname is not None and url.port is not None
    if sign:
        line, sep, rest = raw.partition(b"\r\n")
        extra = f"Host: {url.netloc}\r\nAuthorization: Bearer {fb.faults.token}\r\n"
        if line.startswith(b"POST ") and b"content-type:" not in rest.lower():
            extra += "Content-Type: application/json\r\n"
        raw = line + sep + extra.encode() + rest if sep else raw
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(raw)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def post(path: str, body: bytes, headers: str = "") -> bytes:
    head = f"POST {path} HTTP/1.1\r\n{headers}Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


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


ERROR_RULE = b'{"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 5}'


def head(fb: FaultBroker, **replace: str | None) -> str:
    """The headers the broker's own clients send, with some replaced (None: left out)."""
    headers: dict[str, str | None] = {
        "Host": urlsplit(fb.control_url).netloc,
        "Authorization": f"Bearer {fb.faults.token}",
        "Content-Type": "application/json",
    }
    headers.update(replace)
    return "".join(f"{k}: {v}\r\n" for k, v in headers.items() if v is not None)


def get(path: str, headers: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\n{headers}\r\n".encode()


# What a web page can make a browser send to a loopback port, and a caller without the token.
FOREIGN_REQUESTS = [
    pytest.param(
        lambda fb: post(
            "/v1/error",
            ERROR_RULE,
            head(fb, **{"Content-Type": "application/x-www-form-urlencoded"}),
        ),
        415,
        "application/json",
        id="form-post",
    ),
    pytest.param(
        lambda fb: post("/v1/crash-restart", b"{}", head(fb, **{"Content-Type": "text/plain"})),
        415,
        "application/json",
        id="text-plain-crash-restart",
    ),
    pytest.param(
        lambda fb: post("/v1/error", ERROR_RULE, head(fb, **{"Content-Type": None})),
        415,
        "application/json",
        id="post-without-content-type",
    ),
    pytest.param(
        lambda fb: post(
            "/v1/error", ERROR_RULE, head(fb, Host=f"evil.example:{urlsplit(fb.control_url).port}")
        ),
        403,
        "Host",
        id="rebound-host-post",
    ),
    pytest.param(
        lambda fb: get(
            "/v1/status", head(fb, Host=f"evil.example:{urlsplit(fb.control_url).port}")
        ),
        403,
        "Host",
        id="rebound-host-get",
    ),
    pytest.param(
        lambda fb: get(
            "/v1/status", head(fb, Host=f"127.0.0.1:{urlsplit(fb.control_url).port + 1}")
        ),
        403,
        "Host",
        id="other-port",
    ),
    pytest.param(lambda fb: get("/v1/status", head(fb, Host=None)), 403, "Host", id="no-host"),
    pytest.param(
        lambda fb: post("/v1/error", ERROR_RULE, head(fb, Origin="http://evil.example")),
        403,
        "Origin",
        id="foreign-origin",
    ),
    pytest.param(
        lambda fb: get("/v1/status", head(fb, Origin="null")), 403, "Origin", id="null-origin"
    ),
    pytest.param(
        lambda fb: post("/v1/error", ERROR_RULE, head(fb, Authorization=None)),
        401,
        "Bearer",
        id="no-token",
    ),
    pytest.param(
        lambda fb: get("/v1/status", head(fb, Authorization=None)), 401, "Bearer", id="get-no-token"
    ),
    pytest.param(
        lambda fb: post("/v1/error", ERROR_RULE, head(fb, Authorization="Bearer wrong")),
        401,
        "Bearer",
        id="wrong-token",
    ),
    pytest.param(
        lambda fb: post(
            "/v1/error", ERROR_RULE, head(fb, Authorization=f"Basic {fb.faults.token}")
        ),
        401,
        "Bearer",
        id="not-bearer",
    ),
]


@pytest.mark.parametrize(("build", "status", "message"), FOREIGN_REQUESTS)
def test_requests_a_web_page_or_a_stranger_can_send_are_refused_and_change_nothing(
    fb: FaultBroker, build: Callable[[FaultBroker], bytes], status: int, message: str
) -> None:
    restarts = fb.faults.status()["broker"]["restarts"]
    refused_before = fb.log_text().count("control plane: refused")
    got, body = http(fb, build(fb), sign=False)
    assert got == status, body
    assert message in str(body["error"])
    # Nothing injected, no restart, and Kafka clients are answered as before.
    status_now = fb.faults.status()
    assert status_now["faults"] == []
    assert status_now["broker"]["restarts"] == restarts
    with RawClient(fb.port, client_id="foreign") as client:
        create_topic(client, "foreign")
        pid = init_producer(client)
        assert produce(client, "foreign", batch(pid, 0, 0)).error_code == 0
    # One log line for the refusal (it is written before the answer).
    refused = lambda: fb.log_text().count("control plane: refused")  # noqa: E731
    assert until_sync(lambda: refused() > refused_before)
    assert refused() == refused_before + 1


def test_a_request_with_host_origin_token_and_json_is_accepted(fb: FaultBroker) -> None:
    port = urlsplit(fb.control_url).port
    raw = post(
        "/v1/error",
        b'{"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 1, "client_id": "ok"}',
        head(
            fb,
            Host=f"localhost:{port}",
            Origin=f"http://localhost:{port}",
            **{"Content-Type": "application/json; charset=utf-8"},
        ),
    )
    got, body = http(fb, raw, sign=False)
    assert got == 200, body
    try:
        with RawClient(fb.port, client_id="ok") as client:
            create_topic(client, "accepted")
            pid = init_producer(client)
            assert produce(client, "accepted", batch(pid, 0, 0)).error_code == 6
            assert produce(client, "accepted", batch(pid, 0, 0)).error_code == 0
    finally:
        fb.faults.clear()


def test_the_token_is_logged_and_written_for_the_owner_only(fb: FaultBroker) -> None:
    token_file = fb.data_dir / "control.token"
    assert token_file.read_text().strip() == fb.faults.token
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    line = fb.wait_for_log("control plane on")
    match = re.search(r"Bearer (\S+);", line)
    assert match is not None and match.group(1) == fb.faults.token
    assert len(fb.faults.token or "") >= 32


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


def minikafka(*args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MINIKAFKA_CONTROL_URL", "MINIKAFKA_CONTROL_TOKEN", "KAFKA_LOG_DIRS")
    }
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "-m", "broker", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_fault_cli_sets_a_fault_that_the_broker_applies(fb: FaultBroker) -> None:
    done = minikafka(
        "fault", "--url", fb.control_url, "--data-dir", str(fb.data_dir),
        "error", "--api", "Produce",
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
    refused = minikafka(
        "fault", "--url", fb.control_url, "--data-dir", str(fb.data_dir),
        "error", "--api", "Nope", "--error", "6",
    )  # fmt: skip
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


def test_fault_cli_finds_the_token_as_the_broker_finds_its_data_dir(fb: FaultBroker) -> None:
    # KAFKA_LOG_DIRS is how the Docker image sets log.dirs: `docker exec ... minikafka fault`.
    found = minikafka(
        "fault", "--url", fb.control_url, "status", KAFKA_LOG_DIRS=str(fb.data_dir)
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["broker"]["bootstrap"] == fb.bootstrap
    given = minikafka(
        "fault", "--url", fb.control_url, "status", MINIKAFKA_CONTROL_TOKEN=fb.faults.token or ""
    )  # fmt: skip
    assert given.returncode == 0, given.stderr
    wrong = minikafka("fault", "--url", fb.control_url, "--token", "nope", "status")
    assert wrong.returncode == 1
    assert "401" in wrong.stderr and "Bearer" in wrong.stderr


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
            # A wildcard bind takes any IP literal as Host (the port may be a published one).
            sock.sendall(
                b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:1\r\n"
                + f"Authorization: Bearer {proc.faults.token}\r\n\r\n".encode()
            )
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


def test_an_embedded_broker_hands_its_token_to_its_clients() -> None:
    with ThreadedBroker(control=True) as broker:
        assert broker.control_url is not None and broker.control_token is not None
        by_token = FaultClient(broker.control_url, token=broker.control_token)
        rule = by_token.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=1)
        assert (
            FaultClient(broker.control_url, data_dir=broker.data_dir).status()["faults"][0]["id"]
            == rule
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            FaultClient(broker.control_url, token="wrong").status()
        assert refused.value.code == 401
        refused.value.close()


def test_each_call_is_logged_once_and_a_refused_one_as_refused(fb: FaultBroker) -> None:
    # The broker is the module's: only the lines this test's calls caused are counted.
    before = len(fb.log_text().splitlines())
    with RawClient(fb.port, client_id="logged") as client:
        create_topic(client, "logged")
    got, _ = http(fb, post("/v1/offline", b'{"topic": "logged", "partition": 0}'))
    assert got == 200
    fb.wait_for_log("fault: partition logged-0 is offline")
    got, body = http(fb, post("/v1/offline", b'{"topic": "no-such-topic", "partition": 0}'))
    assert got == 400
    assert body["error"] == "no topic 'no-such-topic' on this broker"
    line = fb.wait_for_log("control plane: refused POST /v1/offline")
    assert "no-such-topic" in line and "(400): no topic 'no-such-topic' on this broker" in line
    got, body = http(fb, post("/v1/explode", b"{}"))
    assert got == 400
    assert "crash-restart" in str(body["error"])
    fb.wait_for_log(r"control plane: refused POST /v1/explode \{\} from .* unknown operation")
    assert http(fb, post("/v1/online", b'{"topic": "logged", "partition": 0}'))[0] == 200
    fb.wait_for_log("fault: partition logged-0 is online")
    lines = fb.log_text().splitlines()[before:]

    def count(text: str) -> int:
        return sum(text in line for line in lines)

    # Once each: the change as the operation logs it, a refused call as refused.
    assert count("logged-0 is offline") == 1
    assert count("no-such-topic") == 1
    assert count("/v1/explode") == 1
    assert count("control plane: offline") == 0
