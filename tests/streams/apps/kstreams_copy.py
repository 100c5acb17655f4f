"""A kstreams application: a stream copying each input record (key and value) to the output.

Usage: kstreams_copy.py BOOTSTRAP IN OUT GROUP
"""

# No `from __future__ import annotations`: kstreams injects a stream function's arguments by
# their annotations, which must be the classes themselves, not strings.
import asyncio
import sys

import kstreams
from kstreams.backends import Kafka


async def main(bootstrap: str, source: str, sink: str, group: str) -> None:
    engine = kstreams.create_engine(title="copy", backend=Kafka(bootstrap_servers=[bootstrap]))

    @engine.stream(source, group_id=group, auto_offset_reset="earliest")
    async def copy(record: kstreams.ConsumerRecord) -> None:
        await engine.send(sink, value=record.value, key=record.key)

    await engine.start()
    print("started", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await engine.stop()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
