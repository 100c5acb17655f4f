"""The compose files' `client` service: produce a few records, read them back, exit 0.

Runs inside the compose network once the broker is healthy. It bootstraps from the name
given (default broker:9092) and then connects where the broker's Metadata points, so it
also proves that the INTERNAL listener advertises an address reachable in the network.
With ``--nodes N`` (docker-compose.cluster.yml) it also checks that the cluster shows N
nodes and writes with acks=all to a topic of N partitions, N replicas each, so that every
node leads one partition and every node's advertised address is dialled.
Exit status 0 when every record came back in order, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

COUNT = 5


def check_nodes(bootstrap: str, topic: str, nodes: int) -> bool:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        brokers = sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"])
        print(f"cluster nodes: {brokers}", flush=True)
        if len(brokers) != nodes:
            print(f"FAILED: expected {nodes} nodes", file=sys.stderr)
            return False
        admin.create_topics([NewTopic(topic, num_partitions=nodes, replication_factor=nodes)])
    finally:
        admin.close()
    return True


def main(bootstrap: str, nodes: int) -> int:
    topic = f"compose-check-{uuid.uuid4().hex[:8]}"
    partitions = max(nodes, 1)
    if nodes > 1 and not check_nodes(bootstrap, topic, nodes):
        return 1
    sent = {p: [f"record {p}.{i}".encode() for i in range(COUNT)] for p in range(partitions)}
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    # Per partition, so that the records come back in the order they were sent.
    for partition, values in sent.items():
        offsets = [
            producer.send(topic, key=b"k", value=value, partition=partition).get(timeout=30).offset
            for value in values
        ]
        print(f"produced {COUNT} records to {topic}-{partition} at offsets {offsets}", flush=True)
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=1000)
    assigned = [TopicPartition(topic, p) for p in sent]
    consumer.assign(assigned)
    consumer.seek_to_beginning(*assigned)
    received: dict[int, list[bytes]] = {p: [] for p in sent}
    deadline = time.monotonic() + 30
    while received != sent and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=1000).items():
            received[tp.partition].extend(r.value for r in records)
    consumer.close()
    print(f"consumed {sum(map(len, received.values()))} records: {received}", flush=True)
    if received != sent:
        print(f"FAILED: expected {sent}", file=sys.stderr)
        return 1
    print("compose client: OK", flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap", nargs="?", default="broker:9092")
    parser.add_argument("--nodes", type=int, default=1, help="nodes the cluster must show")
    args = parser.parse_args()
    sys.exit(main(args.bootstrap, args.nodes))
