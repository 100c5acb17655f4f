"""kafka-python against a per-test broker: produce, consume, and a lost acknowledgement."""

from kafka import KafkaConsumer, KafkaProducer


def produce(bootstrap, topic, values):
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    try:
        for value in values:
            producer.send(topic, value=value)
        producer.flush(timeout=30)
    finally:
        producer.close()


def consume(bootstrap, topic, count):
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id="sample", auto_offset_reset="earliest"
    )
    got = []
    try:
        for _ in range(120):
            for messages in consumer.poll(timeout_ms=500).values():
                got += [m.value for m in messages]
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return got


def test_produce_then_consume(kafka_bootstrap, kafka_topic):
    topic = kafka_topic()
    produce(kafka_bootstrap, topic, [b"1", b"2"])
    assert consume(kafka_bootstrap, topic, 2) == [b"1", b"2"]


def test_lost_acknowledgement_is_not_a_duplicate(kafka_broker, kafka_topic):
    topic = kafka_topic()
    # The broker appends, then never answers: the idempotent producer resends the batch.
    kafka_broker.faults.drop("Produce", count=1)
    produce(kafka_broker.bootstrap, topic, [b"once"])
    assert consume(kafka_broker.bootstrap, topic, 1) == [b"once"]
