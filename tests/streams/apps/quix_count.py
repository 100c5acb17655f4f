"""A quixstreams application: a stateful count per key (state in RocksDB, backed by a
changelog topic), exactly-once. Each input {"n": N} gives one output {"n": N, "count": C},
C being how many inputs of that key it has seen so far.

Usage: quix_count.py BOOTSTRAP IN OUT GROUP STATE_DIR
Environment: HOLD_AT (records: after processing this many, with a transaction open, print
"holding" and block, so a test can SIGKILL it mid-transaction); COMMIT_INTERVAL (seconds).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from quixstreams import Application, State


def main(bootstrap: str, source: str, sink: str, group: str, state_dir: str) -> None:
    hold_at = int(os.environ.get("HOLD_AT", "0"))
    app = Application(
        broker_address=bootstrap,
        consumer_group=group,
        auto_offset_reset="earliest",
        processing_guarantee="exactly-once",
        state_dir=state_dir,
        commit_every=100,
        commit_interval=float(os.environ.get("COMMIT_INTERVAL", "1")),
        # The transactional.id is random per run, so a killed run's open transaction is
        # aborted by its timeout, not fenced: keep it short (librdkafka's default is 60 s).
        producer_extra_config={"transaction.timeout.ms": 10_000},
        # A killed member holds its partitions until its session expires (45 s by default).
        consumer_extra_config={"session.timeout.ms": 6_000, "heartbeat.interval.ms": 1_000},
    )
    topic_in = app.topic(source, key_deserializer="str", value_deserializer="json")
    topic_out = app.topic(sink, key_serializer="str", value_serializer="json")
    processed = 0

    def count(value: dict[str, Any], state: State) -> dict[str, Any]:
        nonlocal processed
        total = state.get("count", 0) + 1
        state.set("count", total)
        processed += 1
        if processed == hold_at:
            # librdkafka's threads keep sending what was produced; the commit never comes.
            print("holding", flush=True)
            threading.Event().wait()
        return {"n": value["n"], "count": total}

    app.dataframe(topic_in).apply(count, stateful=True).to_topic(topic_out)
    print("started", flush=True)
    app.run()


if __name__ == "__main__":
    main(*sys.argv[1:6])
