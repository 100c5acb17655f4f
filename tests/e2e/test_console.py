"""The console and /metrics of a real broker process, driven by confluent-kafka: the counters
equal what was produced and consumed, lag goes to 0 as the group commits, the pages show the
topic, its records and the group; Host, Origin, methods and bad input are refused with a 4xx
while Kafka clients keep being served."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from prometheus_client.parser import text_string_to_metric_families

from broker.config.loader import make_config
from broker.console.logins import PER_USER
from broker.console.server import ConsoleServer
from tests.support.broker_process import BrokerProcess, running
from tests.support.polling import until_sync
from tests.support.sasl import acl_overrides

CONSOLE = {"minikafka.console.listener": "http://127.0.0.1:0"}
Samples = dict[str, list[tuple[dict[str, str], float]]]


def console_url(proc: BrokerProcess) -> str:
    line = proc.wait_for_log(r"minikafka console on http://\S+/ ")
    found = re.search(r"(http://\S+?)/ ", line)
    assert found is not None
    return found.group(1)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    with running(tmp_path_factory.mktemp("console") / "data", CONSOLE) as proc:
        yield proc, console_url(proc)


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def metrics(url: str, headers: dict[str, str] | None = None) -> Samples:
    status, text = get(url + "/metrics", headers)
    assert status == 200, text
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(
        v for got, v in samples.get(name, []) if all(got.get(k) == x for k, x in labels.items())
    )


def create(bootstrap: str, topic: str, partitions: int, **conf: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **conf})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def produce(bootstrap: str, topic: str, records: list[tuple[str, str, int]], **conf: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    for key, val, partition in records:
        producer.produce(topic, key=key, value=val, partition=partition)
    assert producer.flush(30) == 0


def subscribed(proc: BrokerProcess, topic: str, group: str, **conf: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": proc.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **conf,
        }
    )
    consumer.subscribe([topic])
    return consumer


def consume_and_commit(consumer: Consumer, count: int) -> None:
    got = 0
    deadline = time.monotonic() + 30
    while got < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got += 1
    assert got == count
    consumer.commit(asynchronous=False)


def test_metrics_count_what_was_produced_and_consumed_and_lag_goes_to_zero(
    console: tuple[BrokerProcess, str],
) -> None:
    proc, url = console
    topic, group = "metered", "metered-group"
    create(proc.bootstrap, topic, 2)
    produce(proc.bootstrap, topic, [(f"k{i}", f"v{i}", i % 2) for i in range(37)])

    before = metrics(url)
    assert value(before, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == 37
    # Bytes in are the batches appended: exactly what the partitions' logs hold.
    log_size = value(before, "kafka_log_log_size", topic=topic)
    assert log_size > 37 * 4
    assert value(before, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic) == log_size
    assert [
        (labels["partition"], v)
        for labels, v in before["kafka_log_log_logendoffset"]
        if labels["topic"] == topic
    ] == [("0", 19), ("1", 18)]
    assert value(before, "kafka_topic_partitions", topic=topic) == 2
    assert value(before, "kafka_consumergroup_lag", consumergroup=group) == 0
    # The unlabelled totals hold the topic's counts too.
    assert value(before, "kafka_server_brokertopicmetrics_messagesin_total") >= 2 * 37

    consumer = subscribed(proc, topic, group)
    try:
        consume_and_commit(consumer, 37)
        after = metrics(url)
        assert value(after, "kafka_consumergroup_current_offset", consumergroup=group) == 37
        assert value(after, "kafka_consumergroup_lag", consumergroup=group) == 0
        # Every record was fetched once: bytes out are the log's bytes.
        assert (
            value(after, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic) == log_size
        )
        assert value(after, "kafka_coordinator_group_groupmetadatamanager_numgroups") >= 1

        produce(proc.bootstrap, topic, [(f"late{i}", "v", 0) for i in range(5)])
        behind = metrics(url)
        assert [
            v for labels, v in behind["kafka_consumergroup_lag"] if labels["consumergroup"] == group
        ] == [5, 0]
        consume_and_commit(consumer, 5)
        caught_up = metrics(url)
        assert value(caught_up, "kafka_consumergroup_lag", consumergroup=group) == 0
        assert value(
            caught_up, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic
        ) == (42)
    finally:
        consumer.close()

    final = metrics(url)
    produced = value(final, "kafka_network_requestmetrics_requests_total", request="Produce")
    # Counted per API and version, as Kafka's RequestsPerSec (librdkafka asks ApiVersions v3).
    versions = {
        (labels["request"], labels["version"])
        for labels, _ in final["kafka_network_requestmetrics_requests_total"]
    }
    assert ("ApiVersions", "3") in versions
    assert any(request == "Produce" and int(v) >= 3 for request, v in versions)
    assert produced >= 2
    # Each request answered is in the histogram once; the +Inf bucket holds them all.
    assert value(final, "kafka_network_requestmetrics_totaltimems_count", request="Produce") == (
        produced
    )
    assert (
        value(
            final, "kafka_network_requestmetrics_totaltimems_bucket", request="Produce", le="+Inf"
        )
        == produced
    )
    assert value(final, "kafka_network_requestmetrics_requests_total", request="Fetch") >= 1
    assert value(final, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(final, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert {
        labels["delayedOperation"]
        for labels, _ in final["kafka_server_delayedoperationpurgatory_purgatorysize"]
    } == {"Fetch", "Produce"}


def test_pages_show_the_topic_its_records_and_the_groups_lag(
    console: tuple[BrokerProcess, str],
) -> None:
    proc, url = console
    topic, group = "pages<&>", "pages-group"
    create(proc.bootstrap, "pages", 1)
    produce(
        proc.bootstrap,
        "pages",
        [("alpha", '{"n": 1}', 0), ("<b>bold</b>", "plain text", 0), ("omega", "last", 0)],
    )
    status, listing = get(url + "/topics")
    assert status == 200 and ">pages</a>" in listing
    # No script may run on a page that shows what clients stored.
    with urllib.request.urlopen(url + "/topics", timeout=30) as answer:
        head = answer.headers
    assert "default-src 'none'" in head["Content-Security-Policy"]
    assert head["X-Content-Type-Options"] == "nosniff"

    status, detail = get(url + "/topics/pages")
    assert status == 200
    assert "cleanup.policy" in detail and "DEFAULT_CONFIG" in detail
    assert "/topics/pages/0" in detail

    status, records = get(url + "/topics/pages/0")
    assert status == 200
    assert records.index("alpha") < records.index("omega")
    assert "&lt;b&gt;bold&lt;/b&gt;" in records and "<b>bold" not in records
    assert "plain text" in records and "CreateTime" in records

    status, newest = get(url + "/topics/pages/0?order=newest&count=2")
    assert status == 200
    assert newest.index("omega") < newest.index("plain text") and "alpha" not in newest
    status, as_json = get(url + "/topics/pages/0?format=json&count=1")
    assert "{\n  &quot;n&quot;: 1\n}" in as_json
    status, as_hex = get(url + "/topics/pages/0?format=hex&offset=2")
    assert "6f 6d 65 67 61" in as_hex and "alpha" not in as_hex  # "omega"
    # Nonsense in the query falls back to the defaults; counts are capped.
    for query in ("count=abc&offset=-5&format=zzz&order=sideways", "count=999999999&offset=x"):
        status, page = get(url + "/topics/pages/0?" + query)
        assert status == 200 and "alpha" in page and "omega" in page, query

    consumer = Consumer(
        {"bootstrap.servers": proc.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.commit(offsets=[TopicPartition("pages", 0, 1)], asynchronous=False)
    finally:
        consumer.close()
    status, groups = get(url + "/groups")
    assert status == 200 and f">{group}</a>" in groups
    status, page = get(url + f"/groups/{group}")
    assert status == 200
    # committed 1 of 3: the lag is 2
    assert re.search(r">pages</a></td><td>0</td><td>1</td><td>3</td><td>2</td>", page), page

    # A client connected now is listed with its client id and software (KIP-511).
    client = Producer({"bootstrap.servers": proc.bootstrap, "client.id": "overview-client"})
    client.produce("pages", value="x")
    assert client.flush(30) == 0
    status, overview = get(url + "/")
    assert status == 200 and "PLAINTEXT" in overview
    assert get(url + "/favicon.ico") == (204, "")
    assert re.search(r"<td>overview-client</td><td>confluent-kafka-python</td>", overview)
    assert get(url + f"/topics/{topic}")[0] == 404
    assert get(url + "/topics/pages/7")[0] == 404
    assert get(url + "/groups/no-such-group")[0] == 404


def test_a_transactional_batch_shows_its_producer_and_its_commit_marker(
    console: tuple[BrokerProcess, str],
) -> None:
    proc, url = console
    create(proc.bootstrap, "txn-shown", 1)
    producer = Producer({"bootstrap.servers": proc.bootstrap, "transactional.id": "shown-tx"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("txn-shown", key="in-txn", value="v")
    producer.commit_transaction(30)
    status, page = get(url + "/topics/txn-shown/0")
    assert status == 200 and "in-txn" in page
    assert "transactional" in page and "control COMMIT" in page
    assert re.search(r"producer \d+ epoch 0 seq 0, transactional", page), page
    status, detail = get(url + "/topics/txn-shown")
    assert re.search(r"<td>0</td><td>\d+</td><td>0</td><td>0</td><td>0</td>", detail), detail


def test_health_and_ready_answer_while_the_broker_serves(
    console: tuple[BrokerProcess, str],
) -> None:
    _, url = console
    assert get(url + "/health") == (200, '{"status": "UP", "detail": "serving"}\n')
    status, body = get(url + "/ready")
    assert status == 200 and json.loads(body)["status"] == "UP"


def raw(url: str, request: bytes) -> tuple[int, str]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


@pytest.mark.parametrize(
    ("build", "status", "message"),
    [
        pytest.param(
            lambda a: f"GET /metrics HTTP/1.1\r\nHost: evil.example:{a}\r\n\r\n",
            403,
            "Host",
            id="rebound-host",
        ),
        pytest.param(lambda a: "GET /metrics HTTP/1.1\r\n\r\n", 403, "Host", id="no-host"),
        pytest.param(
            lambda a: (
                f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{a}\r\nOrigin: http://evil.example\r\n\r\n"
            ),
            403,
            "Origin",
            id="foreign-origin",
        ),
        pytest.param(
            lambda a: (
                f"POST /topics HTTP/1.1\r\nHost: 127.0.0.1:{a}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                "Content-Length: 3\r\n\r\na=b"
            ),
            403,
            "Origin",
            id="post-without-origin",
        ),
        pytest.param(
            lambda a: (
                f"GET /x HTTP/1.1\r\nHost: 127.0.0.1:{a}\r\n"
                + "X-Pad: "
                + "p" * 70_000
                + "\r\n\r\n"
            ),
            431,
            "too long",
            id="huge-header",
        ),
        pytest.param(
            lambda a: (
                f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{a}\r\n"
                + "".join(f"X-{i}: 1\r\n" for i in range(70))
                + "\r\n"
            ),
            431,
            "headers",
            id="many-headers",
        ),
        pytest.param(lambda a: "hello\r\n\r\n", 400, "request line", id="not-http"),
        pytest.param(
            lambda a: f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{a}\r\nContent-Length: 5\r\n\r\nhello",
            400,
            "no body",
            id="get-with-body",
        ),
        pytest.param(
            lambda a: f"PUT / HTTP/1.1\r\nHost: 127.0.0.1:{a}\r\nContent-Length: 0\r\n\r\n",
            405,
            "not allowed",
            id="put",
        ),
        pytest.param(
            lambda a: (
                f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{a}\r\nTransfer-Encoding: chunked\r\n\r\n"
            ),
            411,
            "Content-Length",
            id="chunked",
        ),
        pytest.param(
            lambda a: f"GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1:{a}\r\n\r\n",
            404,
            "no page",
            id="unknown-page",
        ),
    ],
)
def test_foreign_and_bad_requests_are_refused_and_kafka_clients_keep_being_served(
    console: tuple[BrokerProcess, str], build: object, status: int, message: str
) -> None:
    proc, url = console
    port = url.rsplit(":", 1)[1]
    assert callable(build)
    got, body = raw(url, build(port).encode())
    assert (got, message in body) == (status, True), body
    proc.wait_for_log(rf"console: refused .* \({status}\)")
    # The broker and the console still answer.
    assert get(url + "/health")[0] == 200
    produce(proc.bootstrap, "after-bad-input", [("k", "v", 0)])


def test_own_origin_and_localhost_are_accepted(console: tuple[BrokerProcess, str]) -> None:
    _, url = console
    port = url.rsplit(":", 1)[1]
    assert get(url + "/health", {"Origin": url})[0] == 200
    status, _ = raw(url, f"GET /health HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode())
    assert status == 200


def test_a_client_that_sends_nothing_does_not_hold_a_connection_slot_forever(
    console: tuple[BrokerProcess, str],
) -> None:
    """Connections over the limit are answered 503 at once; idle ones are bounded by time."""
    _, url = console
    host, port = url.removeprefix("http://").rsplit(":", 1)
    idle = [socket.create_connection((host, int(port)), timeout=30) for _ in range(16)]
    try:
        assert until_sync(lambda: raw(url, b"GET /health HTTP/1.1\r\n\r\n")[0] == 503)
        # One that never finishes its request is answered 408 after the read timeout.
        idle[0].settimeout(30)
        assert idle[0].recv(64).startswith(b"HTTP/1.1 408")
    finally:
        for sock in idle:
            sock.close()
    assert until_sync(lambda: get(url + "/health")[0] == 200, timeout=15)


def test_the_console_is_off_unless_configured(tmp_path: Path) -> None:
    with running(tmp_path / "data") as proc:
        proc.wait_for_log("minikafka started")
        assert "minikafka console on" not in proc.log_text()


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def test_with_sasl_the_console_asks_a_broker_user_and_shows_only_what_it_may_describe(
    tmp_path: Path,
) -> None:
    overrides = {
        **acl_overrides(),
        **CONSOLE,
        "minikafka.scram.bootstrap.users": "SCRAM-SHA-256=[name=carol,password=carol-secret]",
    }
    with running(tmp_path / "data", overrides) as proc:
        url = console_url(proc)
        admin = {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
        bootstrap = f"127.0.0.1:{proc.ports['SASL_PLAINTEXT']}"
        for topic in ("shared-topic", "secret-topic"):
            create(bootstrap, topic, 1, **admin)
            produce(bootstrap, topic, [(f"{topic}-key", "v", 0)], **admin)
        client = AdminClient({"bootstrap.servers": bootstrap, **admin})
        binding = AclBinding(
            ResourceType.TOPIC,
            "shared-topic",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.DESCRIBE,
            AclPermissionType.ALLOW,
        )
        [done] = client.create_acls([binding]).values()
        done.result(30)

        # No credentials, a wrong password, an unknown user: 401 with a Basic challenge.
        for headers in ({}, basic("alice", "wrong"), basic("mallory", "x")):
            for path in ("/metrics", "/", "/topics/shared-topic"):
                assert get(url + path, headers)[0] == 401
        assert get(url + "/health")[0] == 200  # orchestrators send no credentials

        alice = basic("alice", "alice-secret")
        seen = metrics(url, alice)
        topics = {labels.get("topic") for samples in seen.values() for labels, _ in samples}
        assert "shared-topic" in topics and "secret-topic" not in topics
        for path in ("/", "/topics", "/topics/shared-topic", "/topics/shared-topic/0"):
            status, page = get(url + path, alice)
            assert status == 200 and "secret-topic" not in page, path
        assert "shared-topic-key" in get(url + "/topics/shared-topic/0", alice)[1]
        assert get(url + "/topics/secret-topic", alice)[0] == 404
        assert get(url + "/topics/secret-topic/0", alice)[0] == 404
        # Other clients' connections are the cluster's: not for alice (no DESCRIBE on it).
        assert "Connections (" not in get(url + "/", alice)[1]
        assert "Connections (" in get(url + "/", basic("admin", "admin-secret"))[1]

        # A super user sees both; a SCRAM user logs in with its password (no ACL: nothing).
        status, listing = get(url + "/topics", basic("admin", "admin-secret"))
        assert status == 200 and "secret-topic" in listing and "shared-topic" in listing
        status, listing = get(url + "/topics", basic("carol", "carol-secret"))
        assert status == 200 and "shared-topic" not in listing
        assert get(url + "/topics", basic("carol", "not-carols"))[0] == 401

        # Guessing carol's password: past a few failures a minute, 429 without a try, even
        # for the right one; logged once, not once per guess; other users are served.
        for _ in range(PER_USER - 1):
            assert get(url + "/topics", basic("carol", "guess"))[0] == 401
        request = urllib.request.Request(url + "/topics", headers=basic("carol", "carol-secret"))
        with pytest.raises(urllib.error.HTTPError) as held:
            urllib.request.urlopen(request, timeout=30)
        held.value.close()
        assert held.value.code == 429 and 0 < int(held.value.headers["Retry-After"]) <= 60
        assert get(url + "/topics", basic("admin", "admin-secret"))[0] == 200
        failed = [line for line in proc.log_text().splitlines() if "failed login" in line]
        assert len([line for line in failed if "as 'carol'" in line]) == 1, failed
        assert "(401)" not in proc.log_text() and "(429)" not in proc.log_text()


@pytest.mark.asyncio
async def test_a_non_loopback_peer_is_refused_and_ready_waits_for_a_broker() -> None:
    """A wildcard bind without allow.remote (only possible in-process: the configuration
    refuses it) still answers only loopback peers."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))
        address = probe.getsockname()[0]
    except OSError:
        address = "127.0.0.1"
    finally:
        probe.close()
    if ipaddress.ip_address(address).is_loopback:
        pytest.skip("no non-loopback address on this machine")
    host = SimpleNamespace(config=make_config(), broker=None)
    server = ConsoleServer.bind_to(host, "0.0.0.0", 0)
    await server.serve()
    try:

        async def ask(source: str, path: str = "/ready") -> bytes:
            reader, writer = await asyncio.open_connection(source, server.port)
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {source}:{server.port}\r\n\r\n".encode())
            answer = await reader.read()
            writer.close()
            return answer

        remote = await ask(address)
        assert remote.startswith(b"HTTP/1.1 403") and b"loopback clients only" in remote
        local = await ask("127.0.0.1")
        assert local.startswith(b"HTTP/1.1 503") and b"DOWN" in local
        # No broker (a fault-injected crash, before its restart): the rest waits too.
        metrics = await ask("127.0.0.1", "/metrics")
        assert metrics.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in metrics
        assert (await ask("127.0.0.1", "/health")).startswith(b"HTTP/1.1 200")
    finally:
        await server.close()


def test_a_kip_848_group_shows_its_assignment_and_lag(console: tuple[BrokerProcess, str]) -> None:
    proc, url = console
    topic, group = "kip848-shown", "kip848-group"
    create(proc.bootstrap, topic, 2)
    produce(proc.bootstrap, topic, [(f"k{i}", "v", i % 2) for i in range(10)])
    consumer = subscribed(proc, topic, group, **{"group.protocol": "consumer"})
    try:
        consume_and_commit(consumer, 4)
        # 4 of 10 consumed and committed; lag is published for the partitions committed.
        seen = metrics(url)
        assert value(seen, "kafka_consumergroup_current_offset", consumergroup=group) == 4
        ends = {
            labels["partition"]: v
            for labels, v in seen["kafka_log_log_logendoffset"]
            if labels["topic"] == topic
        }
        assert (
            value(seen, "kafka_consumergroup_lag", consumergroup=group)
            == sum(
                ends[labels["partition"]] - v
                for labels, v in seen["kafka_consumergroup_current_offset"]
                if labels["consumergroup"] == group
            )
            > 0
        )
        consume_and_commit(consumer, 10 - 4)
        status, page = get(url + f"/groups/{group}")
        assert status == 200 and "KIP-848 consumer group, Stable" in page
        assert f"{topic}: [0, 1]" in page
        assert value(metrics(url), "kafka_consumergroup_lag", consumergroup=group) == 0
        assert value(metrics(url), "kafka_consumergroup_current_offset", consumergroup=group) == 10
        status, groups = get(url + "/groups")
        assert re.search(
            rf">{group}</a></td><td>consumer</td><td>Stable</td><td>1</td><td>0<", groups
        )
    finally:
        consumer.close()


def test_records_from_a_timestamp(console: tuple[BrokerProcess, str]) -> None:
    proc, url = console
    create(proc.bootstrap, "by-time", 1)
    producer = Producer({"bootstrap.servers": proc.bootstrap})
    for i, ts in enumerate((1_000_000, 2_000_000, 3_000_000)):
        producer.produce("by-time", key=f"at-{i}", value="v", timestamp=ts)
        producer.flush(30)
    status, page = get(url + "/topics/by-time/0?timestamp=1500000")
    assert status == 200
    assert "at-0" not in page and "at-1" in page and "at-2" in page
    status, page = get(url + "/topics/by-time/0?timestamp=9000000")
    assert status == 200 and "at-" not in page
