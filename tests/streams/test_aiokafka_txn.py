"""aiokafka's transactional consume-process-produce loop (send_offsets_to_transaction) as its
own process: SIGKILLed inside an open transaction whose records are already in the log,
then restarted. Under read_committed the output holds every input exactly once; the killed
transaction's records stay in the segment files, aborted when the restarted producer's
InitProducerId fences the old epoch. Also times 100 one-record transactions."""

from __future__ import annotations

import re
from pathlib import Path

from tests.streams.support import TIMINGS, App, consume_all, create_topics, produce, until
from tests.support.broker_process import BrokerProcess
from tests.support.produce import stored

PARTITIONS = 2
TOTAL = 300


def stored_data_values(data_dir: Path, topic: str) -> list[bytes | None]:
    """Values of the data records the broker wrote (control markers left out)."""
    from protocol.records import decode_records

    return [
        record.value
        for p in range(PARTITIONS)
        for header, raw in stored(data_dir, topic, p)
        if not header.is_control
        for record in decode_records(raw, header)
    ]


def test_killed_in_open_transaction_then_restarted(
    broker: BrokerProcess, python: str, tmp_path: Path
) -> None:
    boot = broker.bootstrap
    create_topics(boot, PARTITIONS, "in", "out")
    produce(boot, "in", ((b"k%d" % (n % 7), b"%d" % n) for n in range(TOTAL)))
    args = (boot, "in", "out", "copy", "copy-txn")
    log = tmp_path / "app.log"
    app = App(python, "aiokafka_txn.py", log, *args, MAX_RECORDS="20", HOLD_AT="4")
    try:
        app.wait_for("holding")
        committed = consume_all(boot, "out")
        on_disk = stored_data_values(broker.data_dir, "out")
        # Three transactions committed, the fourth's records written but not committed.
        assert 0 < len(committed) < len(on_disk), (len(committed), len(on_disk))
        app.kill()
        app = App(python, "aiokafka_txn.py", log, *args, MAX_RECORDS="20")
        assert until(lambda: len(consume_all(boot, "out")) >= TOTAL, 120), app.text()[-3000:]
    finally:
        app.kill()
    values = sorted(int(m.value()) for m in consume_all(boot, "out"))
    assert values == list(range(TOTAL))
    on_disk = stored_data_values(broker.data_dir, "out")
    assert len(on_disk) > TOTAL  # the aborted transaction's copies are stored, not read
    assert sorted(set(int(v or b"-1") for v in on_disk)) == list(range(TOTAL))


def test_hundred_transactions_time(broker: BrokerProcess, python: str, tmp_path: Path) -> None:
    boot = broker.bootstrap
    create_topics(boot, 1, "in", "out")
    produce(boot, "in", ((b"k", b"%d" % n) for n in range(100)))
    app = App(
        python,
        "aiokafka_txn.py",
        tmp_path / "app.log",
        boot,
        "in",
        "out",
        "timed",
        "timed-txn",
        MAX_RECORDS="1",
        STOP_AFTER="100",
    )
    try:
        app.wait_for("done", 120)
    finally:
        app.kill()
    match = re.search(r"done (\d+) transactions 100 records in ([\d.]+) s", app.text())
    assert match, app.text()[-3000:]
    assert int(match.group(1)) == 100
    TIMINGS["aiokafka: 100 consume-process-produce transactions"] = float(match.group(2))
    assert [int(m.value()) for m in consume_all(boot, "out")] == list(range(100))
