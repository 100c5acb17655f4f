"""A FastStream application: each input value N (a number) becomes N@NAME on the output topic, NAME
telling which instance handled it. Two instances in one group share the input's partitions.

Usage: faststream_copy.py BACKEND BOOTSTRAP IN OUT GROUP NAME
BACKEND: kafka (FastStream's aiokafka broker) or confluent (its confluent-kafka broker).
"""

from __future__ import annotations

import asyncio
import sys

from faststream import FastStream


def main(backend: str, bootstrap: str, source: str, sink: str, group: str, name: str) -> None:
    if backend == "kafka":
        from faststream.kafka import KafkaBroker
    else:
        from faststream.confluent import KafkaBroker  # type: ignore[assignment]
    broker = KafkaBroker(bootstrap)

    @broker.subscriber(source, group_id=group, auto_offset_reset="earliest")
    @broker.publisher(sink)
    async def handle(body: int) -> str:
        # Inputs are bare numbers, which FastStream decodes as JSON.
        return f"{body}@{name}"

    app = FastStream(broker)

    @app.after_startup
    async def started() -> None:
        print("started", flush=True)

    asyncio.run(app.run())


if __name__ == "__main__":
    main(*sys.argv[1:7])
