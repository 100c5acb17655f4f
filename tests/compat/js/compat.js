#!/usr/bin/env node
// kafkajs 2.2 against minikafka, driven by tests/compat/test_kafkajs.py.
//
//   node compat.js produce BOOTSTRAP TOPIC COUNT
//   node compat.js consume BOOTSTRAP TOPIC COUNT GROUP
//
// produce: an idempotent producer (acks -1) sends COUNT keyed records in sends of 100 and
// prints one JSON line per send with the RecordMetadata kafkajs got back.
// consume: a consumer-group member (subscribe fromBeginning) reads until it has COUNT
// records, prints one JSON line per record, then the group's committed offsets.
// kafkajs logs go to stderr so stdout carries only JSON. A deadline bounds every run: a
// broker that never answers must fail the test, not hang it.
'use strict';

const { Kafka, logLevel, Partitioners } = require('kafkajs');

const SEND_SIZE = 100;
const DEADLINE_MS = 60000;

const key = (i) => `key-${i}`;
const value = (i) => `kafkajs record ${i}: the quick brown fox jumps over the lazy dog`;

function stderrLogger() {
  return ({ namespace, level, label, log }) => {
    const { message, ...extra } = log;
    process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`);
  };
}

function client(bootstrap, clientId) {
  return new Kafka({
    clientId,
    brokers: [bootstrap],
    logLevel: logLevel.INFO,
    logCreator: stderrLogger,
  });
}

const emit = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);

async function produce(bootstrap, topic, count) {
  const producer = client(bootstrap, 'compat-kafkajs-producer').producer({
    idempotent: true,
    // kafkajs keeps sequence numbers correct only with one request in flight per broker.
    maxInFlightRequests: 1,
    // The Java-compatible murmur2 partitioner; naming it also silences kafkajs's v2 notice.
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  try {
    for (let start = 0; start < count; start += SEND_SIZE) {
      const messages = [];
      for (let i = start; i < Math.min(start + SEND_SIZE, count); i++) {
        messages.push({ key: key(i), value: value(i) });
      }
      const metadata = await producer.send({ topic, acks: -1, messages });
      emit({ send: start, metadata });
    }
  } finally {
    await producer.disconnect();
  }
}

async function consume(bootstrap, topic, count, groupId) {
  const kafka = client(bootstrap, 'compat-kafkajs-consumer');
  const consumer = kafka.consumer({ groupId });
  let seen = 0;
  let done;
  let crashed;
  const finished = new Promise((resolve, reject) => {
    done = resolve;
    crashed = reject;
  });
  // A crash (e.g. an API the broker does not serve) fails the run at once instead of
  // waiting for the deadline.
  consumer.on(consumer.events.CRASH, ({ payload }) => crashed(payload.error));
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        emit({
          partition,
          offset: Number(message.offset),
          key: message.key === null ? null : message.key.toString(),
          value: message.value === null ? null : message.value.toString(),
        });
        seen += 1;
        if (seen === count) done();
      },
    });
    await finished;
    // Stopping commits the offsets of everything processed (autoCommit is on).
    await consumer.stop();
  } finally {
    await consumer.disconnect();
  }
  const admin = kafka.admin();
  await admin.connect();
  try {
    const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
    emit({ committed });
  } finally {
    await admin.disconnect();
  }
}

async function main() {
  const [mode, bootstrap, topic, countText, groupId] = process.argv.slice(2);
  const count = Number(countText);
  const deadline = setTimeout(() => {
    process.stderr.write(`compat.js ${mode}: no result within ${DEADLINE_MS} ms\n`);
    process.exit(3);
  }, DEADLINE_MS);
  if (mode === 'produce') {
    await produce(bootstrap, topic, count);
  } else if (mode === 'consume') {
    await consume(bootstrap, topic, count, groupId);
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  clearTimeout(deadline);
}

main().catch((err) => {
  process.stderr.write(`compat.js failed: ${err.stack || err}\n`);
  process.exit(1);
});
