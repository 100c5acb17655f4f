"""The docker-compose.yml `client` service: produce a few records, read them back, exit 0.

Runs inside the compose network once the broker is healthy. It bootstraps from the name
given (default broker:9092) and then connects where the broker's Metadata points, so it
also proves that the INTERNAL listener advertises an address reachable in the network.
Exit status 0 when every record came back in order, 1 otherwise.
"""

from __future__ import annotations

import sys
import time
import uuid

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

COUNT = 5


def main(bootstrap: str) -> int:
    topic = f"compose-check-{uuid.uuid4().hex[:8]}"
    sent = [f"record {i}".encode() for i in range(COUNT)]
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    # One partition, so that the records come back in the order they were sent.
    offsets = [
        producer.send(topic, key=b"k", value=value, partition=0).get(timeout=30).offset
        for value in sent
    ]
    producer.close()
    print(f"produced {COUNT} records to {topic} at offsets {offsets}", flush=True)

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=1000)
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    received: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(received) < COUNT and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            received.extend(r.value for r in records)
    consumer.close()
    print(f"consumed {len(received)} records: {received}", flush=True)
    if received != sent:
        print(f"FAILED: expected {sent}", file=sys.stderr)
        return 1
    print("compose client: OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "broker:9092"))
