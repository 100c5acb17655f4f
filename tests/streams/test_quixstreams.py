"""quixstreams, exactly-once: a stateful count per key whose state lives in RocksDB backed by
a changelog topic. The application is SIGKILLed inside an open transaction (outputs and
changelog records already in the log), its local state directory is deleted, and it is
restarted: the state comes back from the changelog topic alone, and the output read with
read_committed holds one record per input with the right running count. The killed run's
transaction (random transactional.id, so nothing fences it) is aborted by the broker when
its timeout passes; its records stay in the segment files."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

from tests.streams.support import App, consume_all, create_topics, produce, until
from tests.support.broker_process import BrokerProcess
from tests.support.produce import stored

PARTITIONS = 2
TOTAL = 300
KEYS = 5


def stored_outputs(data_dir: Path, topic: str) -> list[dict[str, int]]:
    from protocol.records import decode_records

    return [
        json.loads(record.value or b"null")
        for p in range(PARTITIONS)
        for header, raw in stored(data_dir, topic, p)
        if not header.is_control
        for record in decode_records(raw, header)
    ]


def test_exactly_once_count_survives_kill_and_lost_state(
    broker: BrokerProcess, python: str, tmp_path: Path
) -> None:
    boot = broker.bootstrap
    create_topics(boot, PARTITIONS, "words", "counts")
    produce(
        boot, "words", ((b"k%d" % (n % KEYS), json.dumps({"n": n}).encode()) for n in range(TOTAL))
    )
    state = tmp_path / "state"
    args = (boot, "words", "counts", "counter", str(state))
    log = tmp_path / "app.log"
    app = App(python, "quix_count.py", log, *args, HOLD_AT="150", COMMIT_INTERVAL="60")
    try:
        app.wait_for("holding", 120)
        # The checkpoint after 100 records committed; 101..149 are in the open transaction.
        assert until(lambda: len(stored_outputs(broker.data_dir, "counts")) >= 149, 30)
        committed = consume_all(boot, "counts")
        assert 100 <= len(committed) < 149, len(committed)
        app.kill()
        shutil.rmtree(state)
        app = App(python, "quix_count.py", log, *args)
        assert until(lambda: len(consume_all(boot, "counts")) >= TOTAL, 180), app.text()[-4000:]
    finally:
        app.kill()
    seen: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for m in consume_all(boot, "counts"):
        out = json.loads(m.value())
        seen[m.key().decode()].append((out["n"], out["count"]))
    assert sum(len(v) for v in seen.values()) == TOTAL
    for k in range(KEYS):
        outputs = seen[f"k{k}"]
        assert sorted(n for n, _ in outputs) == list(range(k, TOTAL, KEYS))
        # Running counts with no gap and no restart from 1: the deleted state was rebuilt.
        assert [c for _, c in outputs] == list(range(1, len(outputs) + 1))
    assert len(stored_outputs(broker.data_dir, "counts")) > TOTAL  # the aborted copies
    changelogs = [p.name for p in broker.data_dir.iterdir() if p.name.startswith("changelog__")]
    assert changelogs, sorted(p.name for p in broker.data_dir.iterdir())
