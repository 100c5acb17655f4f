"""FastStream with both of its Kafka backends (aiokafka and confluent-kafka): two instances of
one application in one consumer group; once both are handling records, one is stopped
(SIGTERM, as an orchestrator does) while a second wave of input is being processed. Every
input reaches the output (at-least-once). Inputs handled by the stopped instance after its
last offset commit are handled again by the other one: those are the only duplicates."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.streams.support import NOTES, App, consume_all, create_topics, produce, until
from tests.support.broker_process import BrokerProcess

PARTITIONS = 4
WAVE = 200


def handled(bootstrap: str) -> list[tuple[int, str]]:
    out = []
    for m in consume_all(bootstrap, "processed"):
        value, name = m.value().split(b"@")
        out.append((int(value), name.decode()))
    return out


@pytest.mark.parametrize("backend", ["kafka", "confluent"])
def test_two_instances_one_stopped_mid_stream(
    broker: BrokerProcess, python: str, tmp_path: Path, backend: str
) -> None:
    boot = broker.bootstrap
    create_topics(boot, PARTITIONS, "orders", "processed")
    apps = {
        name: App(
            python,
            "faststream_copy.py",
            tmp_path / f"{name}.log",
            backend,
            boot,
            "orders",
            "processed",
            "workers",
            name,
        )
        for name in ("a", "b")
    }
    sent = 0
    try:
        for app in apps.values():
            app.wait_for("started")

        def both_handling() -> bool:
            # Input keeps arriving until the group has settled with both instances in it.
            nonlocal sent
            produce(boot, "orders", ((b"%d" % n, b"%d" % n) for n in range(sent, sent + 20)))
            sent += 20
            return {name for _, name in handled(boot)} == {"a", "b"}

        assert until(both_handling, 120), [a.text()[-2000:] for a in apps.values()]
        produce(boot, "orders", ((b"%d" % n, b"%d" % n) for n in range(sent, sent + WAVE)))
        sent += WAVE
        assert apps["a"].stop() == 0, apps["a"].text()[-3000:]
        assert until(lambda: {n for n, _ in handled(boot)} == set(range(sent)), 120), apps[
            "b"
        ].text()[-3000:]
    finally:
        for app in apps.values():
            app.kill()
    outputs = handled(boot)
    duplicates = sorted(n for n, times in Counter(n for n, _ in outputs).items() if times > 1)
    NOTES[f"faststream ({backend}), one of two instances stopped"] = (
        f"{sent} inputs, {len(outputs)} outputs, {len(duplicates)} inputs handled twice"
    )
    # A duplicate was handled first by the stopped instance, then by the survivor.
    for n in duplicates:
        assert {name for m, name in outputs if m == n} == {"a", "b"}, n
