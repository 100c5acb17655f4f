"""aiokafka against a per-test broker, and the in-process asyncio broker with a crash."""

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

import minikafka


async def produce(bootstrap, topic, values):
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    await producer.start()
    try:
        for value in values:
            await producer.send_and_wait(topic, value)
    finally:
        await producer.stop()


async def consume(bootstrap, topic, count):
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id="sample", auto_offset_reset="earliest"
    )
    await consumer.start()
    got = []
    try:
        for _ in range(120):
            for messages in (await consumer.getmany(timeout_ms=500)).values():
                got += [m.value for m in messages]
            if len(got) >= count:
                break
    finally:
        await consumer.stop()
    return got


def test_produce_then_consume(kafka_bootstrap, kafka_topic):
    topic = kafka_topic()
    asyncio.run(produce(kafka_bootstrap, topic, [b"p", b"q"]))
    assert asyncio.run(consume(kafka_bootstrap, topic, 2)) == [b"p", b"q"]


def test_in_process_broker_survives_a_crash():
    async def scenario():
        async with minikafka.Broker(num_partitions=1) as broker:
            await produce(broker.bootstrap, "crashy", [b"before"])
            await broker.crash_restart()
            await produce(broker.bootstrap, "crashy", [b"after"])
            return await consume(broker.bootstrap, "crashy", 2)

    assert asyncio.run(scenario()) == [b"before", b"after"]
