"""The console in headless Chromium (Debian's ``chromium``, driven by Playwright) against a real
broker process fed by confluent-kafka: the pages show the topic and its records, a group's lag
goes to 0 as its consumer reads, a fault set from the page is answered to a client, a record
produced from the form is on disk, the overview's rates and the request log's tail update
from the console's own script under its CSP; with SASL and ACLs the browser logs in with a
broker user's Basic credentials and sees only what that user may DESCRIBE. Each page is
saved as a screenshot under the test's tmp dir (and under $CONSOLE_SCREENSHOTS when set:
docs/console/ is made so).

``make console-browser`` installs chromium and playwright and runs these."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.e2e.test_console import CONSOLE, console_url, create, produce
from tests.support.broker_process import BrokerProcess, running
from tests.support.sasl import acl_overrides

CHROMIUM = "/usr/bin/chromium"
# make console-browser installs both and sets this: there a missing one fails, not skips.
if os.environ.get("MINIKAFKA_CONSOLE_BROWSER") == "1":
    import playwright.sync_api as sync_api

    assert os.path.exists(CHROMIUM), f"no {CHROMIUM}"
else:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no {CHROMIUM} (make console-browser installs it)", allow_module_level=True)

pytestmark = pytest.mark.console_browser
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    with running(tmp_path_factory.mktemp("browser") / "data", CONSOLE) as proc:
        yield proc, console_url(proc)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: object, tmp_path: Path) -> Iterator[object]:
    """A page that fails the test on any script error or CSP violation it reports."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})  # type: ignore[attr-defined]
    tab = context.new_page()
    problems: list[str] = []
    tab.on("console", lambda m: m.type == "error" and problems.append(m.text))
    tab.on("pageerror", lambda e: problems.append(str(e)))
    yield tab
    context.close()
    assert problems == []


def shot(page: object, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)  # type: ignore[attr-defined]
    keep = os.environ.get("CONSOLE_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)


def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < deadline, f"not within {DEADLINE_S} s: {what}"
        time.sleep(0.2)


def test_the_pages_show_the_topic_and_its_records(
    console: tuple[BrokerProcess, str], page: object, tmp_path: Path
) -> None:
    proc, url = console
    p: object = page
    create(proc.bootstrap, "orders", 3)
    produce(
        proc.bootstrap,
        "orders",
        [(f"order-{i}", f'{{"id": {i}, "total": {i * 2.5}}}', i % 3) for i in range(30)],
    )
    p.goto(url + "/")  # type: ignore[attr-defined]
    # The overview's counters are rewritten by the console's script as traffic flows.
    before = p.inner_text("#messages-in")  # type: ignore[attr-defined]
    produce(proc.bootstrap, "orders", [("late", "x", 0)])
    until(lambda: p.inner_text("#messages-in") != before, "live messages-in")  # type: ignore[attr-defined]
    shot(p, tmp_path, "overview")

    p.click("text=Topics")  # type: ignore[attr-defined]
    assert p.is_visible("a:text-is('orders')")  # type: ignore[attr-defined]
    shot(p, tmp_path, "topics")
    p.click("a:text-is('orders')")  # type: ignore[attr-defined]
    assert "retention.ms" in p.content()  # type: ignore[attr-defined]
    shot(p, tmp_path, "topic")
    p.goto(url + "/topics/orders/0?format=json")  # type: ignore[attr-defined]
    text = p.inner_text("table")  # type: ignore[attr-defined]
    assert "order-0" in text and "order-27" in text and '"total": 67.5' in text
    shot(p, tmp_path, "messages")


def test_a_groups_lag_goes_to_zero_as_its_consumer_reads(
    console: tuple[BrokerProcess, str], page: object, tmp_path: Path
) -> None:
    proc, url = console
    p: object = page
    topic, group = "lagging", "lagging-group"
    produce(proc.bootstrap, topic, [(f"k{i}", f"v{i}", 0) for i in range(40)])
    consumer = Consumer(
        {
            "bootstrap.servers": proc.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])

    def lag() -> str:
        p.goto(f"{url}/groups/{group}")  # type: ignore[attr-defined]
        cells = p.locator("table >> nth=1 >> tr >> nth=1 >> td")  # type: ignore[attr-defined]
        return str(cells.nth(4).inner_text()) if cells.count() >= 5 else ""

    try:
        read = 0
        deadline = time.monotonic() + DEADLINE_S
        while read < 10 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                read += 1
        consumer.commit(asynchronous=False)
        until(lambda: lag() == "30", "lag 30 after 10 of 40 read")
        shot(p, tmp_path, "group")
        while read < 40 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                read += 1
                consumer.commit(asynchronous=False)
        until(lambda: lag() == "0", "lag 0 once all 40 read")
        p.click("text=Consumer groups")  # type: ignore[attr-defined]
        assert group in p.inner_text("table")  # type: ignore[attr-defined]
        shot(p, tmp_path, "groups")
    finally:
        consumer.close()


def test_a_fault_set_from_the_page_is_answered_to_a_client(
    console: tuple[BrokerProcess, str], page: object, tmp_path: Path
) -> None:
    proc, url = console
    p: object = page
    produce(proc.bootstrap, "guarded", [("k", "v", 0)])
    p.goto(url + "/faults")  # type: ignore[attr-defined]
    p.click("text=Start (or restart) the request log")  # type: ignore[attr-defined]
    assert "log-requests done" in p.inner_text("#outcome")  # type: ignore[attr-defined]
    p.goto(url + "/faults")  # type: ignore[attr-defined]
    p.select_option("select[name=operation]", "error")  # type: ignore[attr-defined]
    p.fill(  # type: ignore[attr-defined]
        "textarea[name=args]",
        '{"api": "Produce", "error": "INVALID_RECORD", "topic": "guarded", "count": 1}',
    )
    p.click("text=Apply")  # type: ignore[attr-defined]
    assert "error done" in p.inner_text("#outcome")  # type: ignore[attr-defined]
    p.goto(url + "/faults")  # type: ignore[attr-defined]
    assert "INVALID_RECORD" in p.inner_text("table")  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": proc.bootstrap, "retries": 0})
    reports: list[object] = []
    producer.produce(
        "guarded", value=b"v", partition=0, on_delivery=lambda e, _m: reports.append(e)
    )
    assert producer.flush(30) == 0
    assert len(reports) == 1 and "INVALID_RECORD" in str(reports[0]), reports
    # The page's tail shows the Produce request, written there by the console's script.
    until(
        lambda: "Produce" in p.inner_text("#request-tail"),  # type: ignore[attr-defined]
        "the request log's tail shows the Produce",
    )
    shot(p, tmp_path, "faults")
    p.select_option("select[name=operation]", "clear")  # type: ignore[attr-defined]
    p.fill("textarea[name=args]", "{}")  # type: ignore[attr-defined]
    p.click("text=Apply")  # type: ignore[attr-defined]
    assert "clear done" in p.inner_text("#outcome")  # type: ignore[attr-defined]


def test_a_record_produced_from_the_form_lands_on_disk(
    console: tuple[BrokerProcess, str], page: object, tmp_path: Path
) -> None:
    proc, url = console
    p: object = page
    produce(proc.bootstrap, "typed", [("first", "1", 0)])
    p.goto(url + "/topics/typed/0")  # type: ignore[attr-defined]
    p.fill("input[name=key]", "from-the-form")  # type: ignore[attr-defined]
    p.fill("textarea[name=value]", "typed in a browser")  # type: ignore[attr-defined]
    p.fill("textarea[name=headers]", "origin=chromium")  # type: ignore[attr-defined]
    p.click("button:text-is('Produce')")  # type: ignore[attr-defined]
    assert "produced to typed-0 at offset 1" in p.inner_text("#outcome")  # type: ignore[attr-defined]
    shot(p, tmp_path, "produced")
    dump = subprocess.run(
        [sys.executable, "-m", "broker", "dump", "--records", str(proc.data_dir / "typed-0")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "from-the-form" in dump and "typed in a browser" in dump and "chromium" in dump, dump


def test_with_sasl_and_acls_the_browser_logs_in_and_sees_only_what_the_acls_allow(
    browser: object, tmp_path: Path
) -> None:
    """A broker with SASL and ACLs: Chromium logs in with a broker user's Basic credentials
    and is shown only the topics that user may DESCRIBE, in every page and in /metrics."""
    overrides = {**acl_overrides(), **CONSOLE}
    with running(tmp_path / "data", overrides) as proc:
        url = console_url(proc)
        admin = {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
        bootstrap = f"127.0.0.1:{proc.ports['SASL_PLAINTEXT']}"
        for topic in ("alices-orders", "payroll"):
            create(bootstrap, topic, 1, **admin)
            produce(bootstrap, topic, [(f"{topic}-key", f"{topic}-value", 0)], **admin)
        client = AdminClient({"bootstrap.servers": bootstrap, **admin})
        bindings = [
            AclBinding(
                ResourceType.TOPIC,
                "alices-orders",
                ResourcePatternType.LITERAL,
                "User:alice",
                "*",
                operation,
                AclPermissionType.ALLOW,
            )
            for operation in (AclOperation.DESCRIBE, AclOperation.READ)
        ]
        for done in client.create_acls(bindings).values():
            done.result(30)

        def tab(username: str, password: str) -> tuple[object, object, list[str]]:
            context = browser.new_context(  # type: ignore[attr-defined]
                viewport={"width": 1200, "height": 800},
                http_credentials={"username": username, "password": password},
            )
            page = context.new_page()
            problems: list[str] = []
            page.on("pageerror", lambda e: problems.append(str(e)))
            return context, page, problems

        context, p, problems = tab("alice", "alice-secret")
        try:
            answer = p.goto(url + "/")  # type: ignore[attr-defined]
            assert answer.status == 200 and "User:alice" in p.inner_text("table")  # type: ignore[attr-defined]
            p.click("text=Topics")  # type: ignore[attr-defined]
            listing = p.inner_text("body")  # type: ignore[attr-defined]
            assert "alices-orders" in listing and "payroll" not in listing, listing
            shot(p, tmp_path, "topics-as-alice")
            p.click("a:text-is('alices-orders')")  # type: ignore[attr-defined]
            p.goto(url + "/topics/alices-orders/0")  # type: ignore[attr-defined]
            assert "alices-orders-value" in p.inner_text("table")  # type: ignore[attr-defined]
            # What alice may not DESCRIBE is answered as if it did not exist.
            assert p.goto(url + "/topics/payroll").status == 404  # type: ignore[attr-defined]
            assert p.goto(url + "/topics/payroll/0").status == 404  # type: ignore[attr-defined]
            p.goto(url + "/metrics")  # type: ignore[attr-defined]
            metrics = p.inner_text("body")  # type: ignore[attr-defined]
            assert 'topic="alices-orders"' in metrics and "payroll" not in metrics
            # The cluster's pages are for its describers.
            p.goto(url + "/acls")  # type: ignore[attr-defined]
            assert "needs DESCRIBE on the cluster" in p.inner_text("body")  # type: ignore[attr-defined]
            assert problems == []
        finally:
            context.close()  # type: ignore[attr-defined]

        # A super user sees both; a wrong password is refused with the Basic challenge.
        context, p, problems = tab("admin", "admin-secret")
        try:
            p.goto(url + "/topics")  # type: ignore[attr-defined]
            listing = p.inner_text("body")  # type: ignore[attr-defined]
            assert "alices-orders" in listing and "payroll" in listing
            assert problems == []
        finally:
            context.close()  # type: ignore[attr-defined]
        context, p, _ = tab("alice", "not-alices")
        try:
            assert p.goto(url + "/topics").status == 401  # type: ignore[attr-defined]
        finally:
            context.close()  # type: ignore[attr-defined]
        proc.wait_for_log(r"console: failed login from 127\.0\.0\.1 as 'alice'")
