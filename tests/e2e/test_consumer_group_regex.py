"""KIP-848 regex subscriptions against a real broker: a catastrophic-backtracking regex
neither stalls the broker nor its next start (matching is RE2's, linear, off the event loop),
regexes RE2/J refuses get INVALID_REGULAR_EXPRESSION, and a normal regex is resolved in the
background, again when a matching topic is created."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from protocol.messages.api_versions import API_VERSIONS
from protocol.schema import Message
from tests.e2e.test_consumer_groups_raw import (
    INVALID_REGULAR_EXPRESSION,
    Owned,
    assigned,
    describe,
    heartbeat,
    heartbeat_until,
    join,
)
from tests.support.broker_process import BrokerProcess
from tests.support.polling import until_sync
from tests.support.produce import create_partitioned_topic
from tests.support.raw_client import RawClient
from tests.support.stored_groups import stored_groups

# Python's re backtracks for ever on it against a name it does not match, like "orders.v1".
EVIL = "((.*)*(.*)*)*y"
SOFTWARE = Message(client_software_name="probe", client_software_version="1.0")
PROBE_P99_LIMIT_S = 0.2
GROUP_ID_NOT_FOUND = 69


class Probe(threading.Thread):
    """Another connection's ApiVersions round trips, timed, until stopped."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.client = RawClient(port, client_id="probe")
        self.latencies: list[float] = []
        self.failure: BaseException | None = None
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.is_set():
                started = time.monotonic()
                answer = self.client.request(API_VERSIONS, 3, SOFTWARE)
                self.latencies.append(time.monotonic() - started)
                assert answer.error_code == 0, answer
        except BaseException as e:  # a socket timeout: the broker stopped answering
            self.failure = e
        finally:
            self.client.close()

    def p99(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def test_backtracking_regex_neither_stalls_the_broker_nor_its_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        with RawClient(broker.port) as client:
            create_partitioned_topic(client, "orders.v1", 1)
            probe = Probe(broker.port)
            probe.start()
            try:
                answer = join(client, "evil", "m", [], regex=EVIL)
                assert answer.error_code == 0, answer
                # The resolution ran (matching nothing) while the probe was being served.
                broker.wait_for_log(r"group evil: resolved regular expressions")
                epoch = answer.member_epoch
                answer = heartbeat(client, "evil", "m", epoch, owned={})
                assert answer.error_code == 0, answer
                # Enough round trips for a p99 (each is about a millisecond when served).
                until_sync(lambda: len(probe.latencies) >= 100 or probe.failure is not None)
            finally:
                probe.stopped.set()
                probe.join(15)
            assert probe.failure is None, probe.failure
            assert len(probe.latencies) >= 100, probe.latencies
            assert probe.p99() < PROBE_P99_LIMIT_S, sorted(probe.latencies)[-5:]
            [member] = describe(client, "evil").members
            assert member.subscribed_topic_regex == EVIL
            assert list(member.assignment.topic_partitions) == []
        broker.stop()
        # Stored with the group, resolved: the restart matches nothing while loading.
        stored = stored_groups(data).consumer_groups()["evil"]
        assert [m.subscribed_topic_regex for m in stored.members] == [EVIL]
        assert stored.resolved_regexes == ((EVIL, ()),)
        started = time.monotonic()
        broker = BrokerProcess(data).start(timeout=15)
        with RawClient(broker.port) as client:
            assert client.request(API_VERSIONS, 3, SOFTWARE).error_code == 0
            [member] = describe(client, "evil").members
            assert member.subscribed_topic_regex == EVIL
        assert time.monotonic() - started < 10
    finally:
        if broker.proc is not None and broker.proc.poll() is None:
            broker.kill()


def test_regexes_re2j_refuses_get_invalid_regular_expression(
    shared_broker: BrokerProcess,
) -> None:
    with RawClient(shared_broker.port) as client:
        for regex, description in (
            ("(?=x)", "invalid or unsupported Perl syntax"),
            ("(a)\\1", "invalid escape sequence"),
            ("(?<name>x)", "invalid or unsupported Perl syntax"),
            ("orders[", "missing closing ]"),
        ):
            answer = join(client, "rx-refused", "m", [], regex=regex)
            assert (answer.error_code, answer.error_message) == (
                INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}.",
            )
        # Nothing was kept.
        assert describe(client, "rx-refused").error_code == GROUP_ID_NOT_FOUND


def test_regex_assigns_matching_topics_then_a_topic_created_later(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        v1 = create_partitioned_topic(client, "orders.v1", 2)
        create_partitioned_topic(client, "payments", 1)
        answer = join(client, "by-regex", "m", [], regex=r"orders\..*")
        assert answer.error_code == 0, answer
        first: Owned = {v1: {0, 1}}
        epoch, owned = heartbeat_until(
            client, "by-regex", "m", answer.member_epoch, assigned(answer), lambda o: o == first, 10
        )
        v2 = create_partitioned_topic(client, "orders.v2", 1)
        # Kafka refreshes a group's regexes at most every 10 s.
        heartbeat_until(
            client, "by-regex", "m", epoch, owned, lambda o: o == {**first, v2: {0}}, 30
        )
        [member] = describe(client, "by-regex").members
        names = {t.topic_name: sorted(t.partitions) for t in member.assignment.topic_partitions}
        assert names == {"orders.v1": [0, 1], "orders.v2": [0]}
    broker.stop()
    stored = stored_groups(broker.data_dir).consumer_groups()["by-regex"]
    assert stored.resolved_regexes == ((r"orders\..*", ("orders.v1", "orders.v2")),)
