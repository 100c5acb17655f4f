"""aiokafka's transactional consume-process-produce loop: each batch read from the input is
written to the output and its offsets committed in the same transaction
(send_offsets_to_transaction). Prints one line per committed transaction.

Usage: aiokafka_txn.py BOOTSTRAP IN OUT GROUP TXN_ID
Environment: MAX_RECORDS (records per transaction, default 50); HOLD_AT (a transaction
number: after its records are written, before it commits, print "holding" and wait forever,
so a test can SIGKILL the process inside an open transaction); STOP_AFTER (records: print
"done" with the seconds since the first transaction began and exit).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


async def main(bootstrap: str, source: str, sink: str, group: str, txn_id: str) -> None:
    max_records = int(os.environ.get("MAX_RECORDS", "50"))
    hold_at = int(os.environ.get("HOLD_AT", "0"))
    stop_after = int(os.environ.get("STOP_AFTER", "0"))
    consumer = AIOKafkaConsumer(
        source,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    await producer.start()
    await consumer.start()
    print("started", flush=True)
    transactions = records = 0
    began = 0.0
    try:
        while not stop_after or records < stop_after:
            batch = await consumer.getmany(timeout_ms=500, max_records=max_records)
            if not batch:
                continue
            if not began:
                began = time.monotonic()
            async with producer.transaction():
                offsets = {}
                for tp, messages in batch.items():
                    for m in messages:
                        await producer.send(sink, m.value, key=m.key, partition=tp.partition)
                    offsets[tp] = messages[-1].offset + 1
                    records += len(messages)
                await producer.send_offsets_to_transaction(offsets, group)
                transactions += 1
                if transactions == hold_at:
                    await producer.flush()  # the records are in the log, uncommitted
                    print("holding", flush=True)
                    await asyncio.Event().wait()
            print(f"committed {transactions} records {records}", flush=True)
        print(
            f"done {transactions} transactions {records} records "
            f"in {time.monotonic() - began:.3f} s",
            flush=True,
        )
    finally:
        await consumer.stop()
        await producer.stop()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
