"""confluent-kafka against a per-test broker: produce, consume, and a retry under a fault."""

import pytest
from confluent_kafka import Consumer, Producer


def produce(bootstrap, topic, values):
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0


def consume(bootstrap, topic, count):
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "sample", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got = []
    try:
        for _ in range(120):
            got += [m.value() for m in consumer.consume(100, timeout=0.5) if m.error() is None]
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return got


def test_produce_then_consume(kafka_bootstrap, kafka_topic):
    topic = kafka_topic()
    produce(kafka_bootstrap, topic, [b"a", b"b", b"c"])
    assert consume(kafka_bootstrap, topic, 3) == [b"a", b"b", b"c"]


@pytest.mark.minikafka(num_partitions=3)
def test_producer_retries_when_the_leader_moves(kafka_broker, kafka_topic):
    topic = kafka_topic()
    kafka_broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
    produce(kafka_broker.bootstrap, topic, [b"x"])
    assert consume(kafka_broker.bootstrap, topic, 1) == [b"x"]
    assert kafka_broker.faults.status()["faults"] == []  # both errors were served
