"""kstreams: a consume-produce stream copying every input to the output, keys kept."""

from __future__ import annotations

from pathlib import Path

from tests.streams.support import App, consume_all, create_topics, produce, until
from tests.support.broker_process import BrokerProcess
from tests.support.produce import stored_values

TOTAL = 200


def test_copy_stream(broker: BrokerProcess, python: str, tmp_path: Path) -> None:
    boot = broker.bootstrap
    create_topics(boot, 1, "source", "sink")
    produce(boot, "source", ((b"k%d" % (n % 3), b"%d" % n) for n in range(TOTAL)))
    app = App(python, "kstreams_copy.py", tmp_path / "app.log", boot, "source", "sink", "copier")
    try:
        assert until(lambda: len(consume_all(boot, "sink")) >= TOTAL, 120), app.text()[-3000:]
    finally:
        app.kill()
    copied = [(m.key(), m.value()) for m in consume_all(boot, "sink")]
    assert copied == [(b"k%d" % (n % 3), b"%d" % n) for n in range(TOTAL)]
    assert stored_values(broker.data_dir, "sink") == [b"%d" % n for n in range(TOTAL)]
