"""Changes made from the console's forms on a real broker process: each lands as the Kafka
request would (confluent-kafka reads it back), is refused without the console's Origin, the
form's content type or the login's token, and with ACLs is allowed only to a principal the
Kafka API allows; a fault set from the page is answered to a client."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.e2e.test_console import (
    CONSOLE,
    basic,
    console_url,
    create,
    get,
    produce,
    raw,
    subscribed,
)
from tests.support.broker_process import BrokerProcess, running
from tests.support.sasl import acl_overrides

TOKEN = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    with running(tmp_path_factory.mktemp("console-actions") / "data", CONSOLE) as proc:
        yield proc, console_url(proc)


def token(url: str, headers: dict[str, str] | None = None) -> str:
    status, page = get(url + "/topics", headers)
    assert status == 200, page
    found = TOKEN.search(page)
    assert found is not None
    return found.group(1)


def post(
    url: str,
    action: str,
    fields: dict[str, str],
    headers: dict[str, str] | None = None,
    *,
    csrf: str | None = None,
    origin: str | None = "own",
    content_type: str = "application/x-www-form-urlencoded",
) -> tuple[int, str]:
    """A form's POST as a browser sends it (Origin, content type, the page's token)."""
    if csrf is None:
        csrf = token(url, headers)
    sent = {"Content-Type": content_type, **(headers or {})}
    if origin is not None:
        sent["Origin"] = url if origin == "own" else origin
    body = urlencode({"csrf": csrf, **fields}).encode()
    request = urllib.request.Request(
        f"{url}/actions/{action}", data=body, headers=sent, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def read_all(bootstrap: str, topic: str, partition: int = 0, **conf: str) -> list[object]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}", **conf}
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 30)
        consumer.assign([TopicPartition(topic, partition, low)])
        out: list[object] = []
        deadline = time.monotonic() + 30
        while len(out) < high - low and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                out.append(message)
        return out
    finally:
        consumer.close()


def test_topics_are_created_altered_trimmed_and_deleted_from_the_page(
    console: tuple[BrokerProcess, str],
) -> None:
    proc, url = console
    status, page = post(
        url, "create-topic", {"name": "formed", "partitions": "3", "configs": "retention.ms=123456"}
    )
    assert status == 200 and "created topic formed (3 partitions)" in page, page
    status, page = get(url + "/topics/formed")
    assert status == 200 and "retention.ms" in page and "123456" in page
    assert "TOPIC_ALREADY_EXISTS" in post(url, "create-topic", {"name": "formed"})[1]

    status, page = post(
        url,
        "alter-config",
        {"topic": "formed", "config": "max.message.bytes", "value": "204800", "op": "set"},
    )
    assert status == 200, page
    assert "204800" in get(url + "/topics/formed")[1]
    status, page = post(
        url, "alter-config", {"topic": "formed", "config": "no.such.config", "value": "1"}
    )
    assert status == 400 and "INVALID_CONFIG" in page

    produce(proc.bootstrap, "formed", [(f"k{i}", f"v{i}", 1) for i in range(10)])
    status, page = post(url, "delete-records", {"topic": "formed", "partition": "1", "offset": "4"})
    assert status == 200 and "log start now 4" in page, page
    assert len(read_all(proc.bootstrap, "formed", 1)) == 6

    # Deletion asks for the name typed again.
    status, page = post(url, "delete-topic", {"name": "formed", "confirm": "form"})
    assert status == 400 and "confirm" in page
    status, page = post(url, "delete-topic", {"name": "formed", "confirm": "formed"})
    assert status == 200 and "deleted topic formed" in page
    assert get(url + "/topics/formed")[0] == 404


def test_a_record_produced_from_the_form_is_read_by_a_client(
    console: tuple[BrokerProcess, str],
) -> None:
    proc, url = console
    produce(proc.bootstrap, "handmade", [("before", "x", 0)])
    fields = {
        "topic": "handmade",
        "partition": "0",
        "key": "order-7",
        "value": '{"total": 12.5}',
        "headers": "trace=abc\nsource=console",
    }
    status, page = post(url, "produce", fields)
    assert status == 200 and "produced to handmade-0 at offset 1" in page, page
    [_, made] = read_all(proc.bootstrap, "handmade")
    assert (made.key(), made.value()) == (b"order-7", b'{"total": 12.5}')  # type: ignore[attr-defined]
    assert made.headers() == [("trace", b"abc"), ("source", b"console")]  # type: ignore[attr-defined]
    assert "order-7" in get(url + "/topics/handmade/0")[1]
    # The change is logged with who made it.
    proc.wait_for_log(r"console: produce by \(no login\): produced to handmade-0")
    status, page = post(url, "produce", {**fields, "partition": "9"})
    assert status == 400 and "UNKNOWN_TOPIC_OR_PARTITION" in page


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def redirected(
    url: str, action: str, fields: dict[str, str], headers: dict[str, str] | None = None
) -> str:
    """The Location of a form's 303 answer (not followed)."""
    body = urlencode({"csrf": token(url, headers), **fields}).encode()
    sent = {"Content-Type": "application/x-www-form-urlencoded", "Origin": url, **(headers or {})}
    request = urllib.request.Request(
        f"{url}/actions/{action}", data=body, headers=sent, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.build_opener(_NoRedirects).open(request, timeout=30)
    answer.value.close()
    assert answer.value.code == 303, answer.value.read()
    return str(answer.value.headers["Location"])


def test_a_change_is_answered_with_a_redirect_so_a_reload_repeats_nothing(
    console: tuple[BrokerProcess, str],
) -> None:
    """POST/redirect/GET: 303 See Other to the page showing the change; loading that page
    again (a browser's reload) shows the outcome and changes nothing."""
    proc, url = console
    produce(proc.bootstrap, "reloaded", [("before", "x", 0)])
    location = redirected(url, "produce", {"topic": "reloaded", "partition": "0", "value": "once"})
    assert re.fullmatch(r"/topics/reloaded/0\?done=[\w-]+", location), location
    for _ in range(3):
        status, page = get(url + location)
        assert status == 200
        assert '<p class="ok" id="outcome">produced to reloaded-0 at offset 1</p>' in page
    assert len(read_all(proc.bootstrap, "reloaded")) == 2
    # An unknown (or expired) reference: the page, without an outcome.
    status, page = get(url + "/topics/reloaded/0?done=unknown")
    assert status == 200 and 'id="outcome"' not in page
    # A refusal changed nothing: answered with its reason, not redirected.
    status, page = post(url, "produce", {"topic": "reloaded", "partition": "7", "value": "x"})
    assert status == 400 and "UNKNOWN_TOPIC_OR_PARTITION" in page


def test_offsets_are_reset_only_while_the_group_has_no_members(
    console: tuple[BrokerProcess, str],
) -> None:
    proc, url = console
    topic, group = "resettable", "resetting-group"
    produce(proc.bootstrap, topic, [(f"k{i}", "v", 0) for i in range(8)])
    consumer = subscribed(proc, topic, group)
    try:
        got = 0
        deadline = time.monotonic() + 30
        while got < 8 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got += 1
        consumer.commit(asynchronous=False)
        fields = {"group": group, "topic": topic, "to": "earliest", "partition": ""}
        status, page = post(url, "reset-offsets", fields)
        assert status == 400 and "only when the group is inactive" in page, page
    finally:
        consumer.close()
    status, page = post(url, "reset-offsets", {"group": group, "topic": topic, "to": "earliest"})
    assert status == 200 and "reset to 0: 0" in page, page
    status, page = get(url + f"/groups/{group}")
    assert re.search(r"<td>0</td><td>0</td><td>8</td><td>8</td>", page), page
    fields = {"group": group, "topic": topic, "to": "offset", "offset": "99"}
    assert "reset to 0: 8" in post(url, "reset-offsets", fields)[1]  # clamped to the log end


def test_a_fault_set_from_the_page_is_answered_to_a_client_and_the_log_tails(
    console: tuple[BrokerProcess, str],
) -> None:
    proc, url = console
    produce(proc.bootstrap, "faulted", [("k", "v", 0)])
    assert post(url, "fault", {"operation": "log-requests", "args": "{}"})[0] == 200
    args = '{"api": "Produce", "error": "INVALID_RECORD", "topic": "faulted", "count": 1}'
    status, page = post(url, "fault", {"operation": "error", "args": args})
    assert status == 200, page
    listing = get(url + "/faults")[1]
    assert "INVALID_RECORD" in listing and "Produce" in listing

    producer = Producer({"bootstrap.servers": proc.bootstrap, "retries": 0})
    reports: list[object] = []
    producer.produce(
        "faulted", key=b"k", value=b"v", partition=0, on_delivery=lambda e, _m: reports.append(e)
    )
    assert producer.flush(30) == 0
    assert len(reports) == 1 and "INVALID_RECORD" in str(reports[0]), reports
    assert "INVALID_RECORD" not in get(url + "/faults")[1]  # used up (count 1)

    status, text = get(url + "/faults/requests.json?since=0")
    assert status == 200 and '"api": "Produce"' in text and '"on": true' in text
    status, page = post(url, "fault", {"operation": "error", "args": '{"api": "Nope", "error": 1}'})
    assert status == 400 and "unknown api" in page
    assert post(url, "fault", {"operation": "clear", "args": "{}"})[0] == 200
    assert '"on": false' in get(url + "/faults/requests.json")[1]


@pytest.mark.parametrize(
    ("change", "status", "message"),
    [
        pytest.param({"csrf": ""}, 403, "token", id="no-token"),
        pytest.param({"csrf": "0" * 64}, 403, "token", id="wrong-token"),
        pytest.param({"origin": None}, 403, "Origin", id="no-origin"),
        pytest.param({"origin": "http://evil.example"}, 403, "cross-origin", id="foreign"),
        pytest.param({"content_type": "text/plain"}, 415, "Content-Type", id="text-plain"),
        pytest.param(
            {"content_type": "multipart/form-data; boundary=x"}, 415, "Content-Type", id="multi"
        ),
    ],
)
def test_forged_changes_are_refused(
    console: tuple[BrokerProcess, str], change: dict[str, str | None], status: int, message: str
) -> None:
    _, url = console
    got, page = post(url, "create-topic", {"name": "forged"}, **change)  # type: ignore[arg-type]
    assert (got, message in page) == (status, True), page
    assert get(url + "/topics/forged")[0] == 404


def test_a_refused_form_is_logged_without_its_token_or_data(
    console: tuple[BrokerProcess, str],
) -> None:
    proc, url = console
    secret = token(url)
    # Refused once its body is read: a forged token, and a good token with a bad field.
    forged = post(url, "produce", {"topic": "t", "value": "private-value"}, csrf="0" * 64)
    bad = post(url, "produce", {"topic": "", "value": "private-value"}, csrf=secret)
    assert (forged[0], bad[0]) == (403, 400), (forged, bad)
    proc.wait_for_log("console: refused POST /actions/produce .*400")
    refused = [
        line for line in proc.log_text().splitlines() if "refused POST /actions/produce" in line
    ]
    assert refused and all("bytes)" in line for line in refused), refused
    assert secret not in proc.log_text() and "private-value" not in proc.log_text()


def test_a_form_body_is_bounded(console: tuple[BrokerProcess, str]) -> None:
    """Refused on its Content-Length, before a byte of it is read."""
    _, url = console
    port = url.rsplit(":", 1)[1]
    head = (
        f"POST /actions/produce HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {url}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {1024 * 1024 + 1}\r\n\r\n"
    )
    status, page = raw(url, head.encode())
    assert status == 413 and "body above" in page


def test_with_acls_the_console_changes_only_what_the_login_may_change(tmp_path: Path) -> None:
    overrides = {
        **acl_overrides(),
        **CONSOLE,
        "minikafka.scram.bootstrap.users": "SCRAM-SHA-256=[name=carol,password=carol-secret]",
    }
    with running(tmp_path / "data", overrides) as proc:
        url = console_url(proc)
        admin, alice = basic("admin", "admin-secret"), basic("alice", "alice-secret")
        status, page = post(url, "create-topic", {"name": "admins", "partitions": "1"}, admin)
        assert status == 200, page
        # Alice may do none of it: each answer is the Kafka API's own refusal.
        refusals = [
            ("create-topic", {"name": "alices"}, "TOPIC_AUTHORIZATION_FAILED"),
            ("produce", {"topic": "admins", "value": "x"}, "TOPIC_AUTHORIZATION_FAILED"),
            ("delete-topic", {"name": "admins", "confirm": "admins"}, "AUTHORIZATION_FAILED"),
            ("fault", {"operation": "close-connections"}, "CLUSTER_AUTHORIZATION_FAILED"),
        ]
        for action, fields, error in refusals:
            status, page = post(url, action, fields, alice)
            assert status == 400 and error in page, (action, page)
        # A token is bound to its login: admin's page does not lend alice its token.
        status, page = post(
            url, "produce", {"topic": "admins", "value": "x"}, alice, csrf=token(url, admin)
        )
        assert status == 403 and "token" in page
        status, page = post(url, "produce", {"topic": "admins", "value": "y"}, admin)
        assert status == 200, page
        # The outcome a change redirects to is shown to its own login only.
        location = redirected(
            url,
            "alter-config",
            {"topic": "admins", "config": "retention.ms", "value": "86400000"},
            admin,
        )
        assert 'id="outcome"' in get(url + location, admin)[1]
        assert 'id="outcome"' not in get(url + "/topics?" + location.partition("?")[2], alice)[1]
        assert (
            len(
                read_all(
                    f"127.0.0.1:{proc.ports['SASL_PLAINTEXT']}",
                    "admins",
                    **{
                        "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanisms": "PLAIN",
                        "sasl.username": "admin",
                        "sasl.password": "admin-secret",
                    },
                )
            )
            == 1
        )
        # ACLs and users are listed for the cluster's describers only.
        assert "needs DESCRIBE on the cluster" in get(url + "/acls", alice)[1]
        assert "needs DESCRIBE on the cluster" in get(url + "/users", alice)[1]
        assert "need DESCRIBE on the cluster" in get(url + "/faults", alice)[1]
        assert get(url + "/faults/requests.json", alice)[0] == 403
        assert get(url + "/faults/requests.json", admin)[0] == 200
        admin_client = AdminClient(
            {
                "bootstrap.servers": f"127.0.0.1:{proc.ports['SASL_PLAINTEXT']}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "PLAIN",
                "sasl.username": "admin",
                "sasl.password": "admin-secret",
            }
        )
        binding = AclBinding(
            ResourceType.TOPIC,
            "admins",
            ResourcePatternType.PREFIXED,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        [done] = admin_client.create_acls([binding]).values()
        done.result(30)
        listing = get(url + "/acls", admin)[1]
        assert (
            "<td>User:alice</td><td>*</td><td>Topic</td><td>admins</td><td>PREFIXED</td><td>Read</td>"
            in (listing)
        ), listing
        assert "kafka-acls.sh" in listing
        users = get(url + "/users", admin)[1]
        assert "<td>carol</td><td>SCRAM-SHA-256</td>" in users, users


def test_search_finds_by_key_or_value_within_a_bounded_window(
    console: tuple[BrokerProcess, str],
) -> None:
    proc, url = console
    topic = "searched"
    colors = ["red", "blue", "green"]
    produce(
        proc.bootstrap,
        topic,
        [(f"user-{i}", f'{{"color": "{colors[i % 3]}"}}', 0) for i in range(12_000)],
    )
    page = get(url + f"/topics/{topic}/0?search=user-1234&in=key")[1]
    assert "1 match(es)" in page and "<pre>user-1234</pre>" in page, page
    assert "0 match(es)" in get(url + f"/topics/{topic}/0?search=user-1234&in=value")[1]
    # A needle in no record: the window stops at 10,000 records, with a link to go on.
    page = get(url + f"/topics/{topic}/0?search=purple&in=value")[1]
    assert "0 match(es)" in page and "scanned offsets 0 to 9999 (10000 records" in page, page
    assert "search on" in page and "offset=10000" in page
    page = get(url + f"/topics/{topic}/0?search=green&in=value&offset=11000")[1]
    window = re.search(r'<p id="search-window">[^<]*', page)
    assert window is not None
    assert "334 match(es)" in window.group(0)
    assert "scanned offsets 11000 to 11999" in window.group(0)
    # A page's 500 matches found: the window ends at the last one shown.
    page = get(url + f"/topics/{topic}/0?search=blue&in=value&offset=10000")[1]
    window = re.search(r'<p id="search-window">[^<]*<a href="[^"]*"', page)
    assert window is not None
    assert "500 match(es)" in window.group(0) and "offsets 10000 to 11497" in window.group(0)
    assert "offset=11498" in window.group(0)


def test_in_a_simulated_cluster_a_change_reaches_the_partitions_leader(tmp_path: Path) -> None:
    with running(tmp_path / "data", {**CONSOLE, "minikafka.cluster.size": "3"}) as proc:
        url = console_url(proc)
        create(proc.bootstrap, "spread", 3)
        for partition in range(3):  # led by three different nodes
            fields = {"topic": "spread", "partition": str(partition), "value": f"v{partition}"}
            status, page = post(url, "produce", fields)
            assert status == 200 and f"produced to spread-{partition} at offset 0" in page
            fields = {"topic": "spread", "partition": str(partition), "offset": "-1"}
            status, page = post(url, "delete-records", fields)
            assert status == 200 and "log start now 1" in page, page
