"""A faust-streaming application: a table counting inputs per key, in memory only (so every
start rebuilds it from the table's changelog topic); each input sends the key's new count.

Usage: faust_count.py BOOTSTRAP IN OUT APP_ID (runs `faust worker`)
"""

from __future__ import annotations

import sys

import faust

bootstrap, source, sink, app_id = sys.argv[1:5]
app = faust.App(
    app_id,
    broker=f"kafka://{bootstrap}",
    store="memory://",
    topic_partitions=2,
    web_enabled=False,
    broker_commit_every=50,
    broker_commit_interval=0.5,
    # A killed member holds its partitions until its session expires (60 s by default).
    broker_session_timeout=6.0,
    broker_heartbeat_interval=1.0,
)
inputs = app.topic(source, key_serializer="raw", value_serializer="raw")
outputs = app.topic(sink, key_serializer="raw", value_serializer="raw")
counts = app.Table("counts", default=int, partitions=2)


@app.agent(inputs)
async def count(stream: faust.StreamT[bytes]) -> None:
    async for key, _value in stream.items():
        counts[key.decode()] += 1
        await outputs.send(key=key, value=b"%d" % counts[key.decode()])


if __name__ == "__main__":
    sys.argv = [sys.argv[0], "worker", "--loglevel", "info"]
    app.main()
