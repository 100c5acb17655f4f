#!/usr/bin/env node
// kafkajs 2.2's admin client against minikafka, driven by tests/compat/test_kafkajs_admin.py.
//
//   node admin.js BOOTSTRAP < plan.json
//
// The plan is a JSON array of steps run in order, each {"op": NAME, "args": [...]}. Every
// step prints one JSON line: {"op", "ok": result} or {"op", "error": {...}}; a failing step
// does not stop the plan, because refusals (INVALID_CONFIG, MESSAGE_TOO_LARGE, ...) are
// results the test checks. Ops:
//
//   any kafkajs admin method (createTopics, describeConfigs, deleteTopicRecords, ...):
//       admin[op](...args); describeGroups also decodes each member's assignment.
//   send {topic, messages, acks}: one producer.send (plain producer, no retries, so a
//       refusal reaches the test as the broker's error, not a retry timeout).
//   consume {topic, groupId, count, hold}: a group member reads `count` records from the
//       beginning and returns them; with hold it stays in the group until stopConsumer.
//   stopConsumer {groupId}: stops and disconnects a held consumer (committing its offsets).
//
// kafkajs logs go to stderr so stdout carries only JSON. A deadline bounds the whole run.
'use strict';

const { Kafka, logLevel, Partitioners, AssignerProtocol } = require('kafkajs');

const DEADLINE_MS = 60000;

function stderrLogger() {
  return ({ namespace, label, log }) => {
    const { message, ...extra } = log;
    process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`);
  };
}

const emit = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);

// kafkajs errors carry the broker's error as `type` (e.g. MESSAGE_TOO_LARGE); aggregate and
// per-partition errors nest theirs, and retriers wrap the original in `cause`.
function describeError(err) {
  if (err === null || err === undefined) return null;
  const out = { name: err.name, type: err.type, code: err.code, message: err.message };
  if (err.retriable !== undefined) out.retriable = err.retriable;
  if (err.cause) out.cause = describeError(err.cause);
  if (Array.isArray(err.errors)) out.errors = err.errors.map(describeError);
  if (Array.isArray(err.partitions)) {
    out.partitions = err.partitions.map((p) => ({ ...p, error: describeError(p.error) }));
  }
  if (Array.isArray(err.groups)) {
    out.groups = err.groups.map((g) => ({ ...g, error: describeError(g.error) }));
  }
  return out;
}

// Buffers in admin results (group member metadata) become base64 strings.
function plain(value) {
  return JSON.parse(
    JSON.stringify(value, (_key, v) =>
      v && v.type === 'Buffer' && Array.isArray(v.data) ? Buffer.from(v.data).toString('base64') : v
    )
  );
}

class Runner {
  constructor(bootstrap) {
    this.kafka = new Kafka({
      clientId: 'compat-kafkajs-admin',
      brokers: [bootstrap],
      logLevel: logLevel.INFO,
      logCreator: stderrLogger,
      // A refusal must come back as the broker's error, not after retries run out.
      retry: { retries: 0 },
    });
    this.admin = this.kafka.admin();
    this.producer = null;
    this.consumers = new Map();
  }

  async start() {
    await this.admin.connect();
  }

  async close() {
    for (const consumer of this.consumers.values()) await consumer.disconnect();
    if (this.producer) await this.producer.disconnect();
    await this.admin.disconnect();
  }

  async run(op, args) {
    if (op === 'send') return this.send(args[0]);
    if (op === 'consume') return this.consume(args[0]);
    if (op === 'stopConsumer') return this.stopConsumer(args[0]);
    if (typeof this.admin[op] !== 'function') throw new Error(`unknown op ${op}`);
    const result = await this.admin[op](...args);
    if (op === 'describeGroups') return this.decodeAssignments(result);
    return result;
  }

  decodeAssignments({ groups }) {
    return {
      groups: groups.map((g) => ({
        ...g,
        members: g.members.map((m) => {
          const decoded = m.memberAssignment.length
            ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment)
            : null;
          return { ...m, assignment: decoded && decoded.assignment };
        }),
      })),
    };
  }

  async send({ topic, messages, acks = -1 }) {
    if (!this.producer) {
      this.producer = this.kafka.producer({
        createPartitioner: Partitioners.DefaultPartitioner,
        retry: { retries: 0 },
      });
      await this.producer.connect();
    }
    return this.producer.send({ topic, acks, messages });
  }

  async consume({ topic, groupId, count, hold = false }) {
    const consumer = this.kafka.consumer({ groupId, retry: { retries: 5 } });
    const got = [];
    let done;
    let crashed;
    const finished = new Promise((resolve, reject) => {
      done = resolve;
      crashed = reject;
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => crashed(payload.error));
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        got.push({
          partition,
          offset: Number(message.offset),
          timestamp: Number(message.timestamp),
          key: message.key === null ? null : message.key.toString(),
          value: message.value === null ? null : message.value.toString(),
        });
        if (got.length === count) done();
      },
    });
    try {
      await finished;
    } catch (err) {
      await consumer.disconnect();
      throw err;
    }
    if (hold) {
      this.consumers.set(groupId, consumer);
    } else {
      await consumer.disconnect();
    }
    return got;
  }

  async stopConsumer({ groupId }) {
    const consumer = this.consumers.get(groupId);
    this.consumers.delete(groupId);
    // disconnect stops the run loop, commits what was processed and leaves the group.
    await consumer.disconnect();
    return true;
  }
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function main() {
  const [bootstrap] = process.argv.slice(2);
  const deadline = setTimeout(() => {
    process.stderr.write(`admin.js: no result within ${DEADLINE_MS} ms\n`);
    process.exit(3);
  }, DEADLINE_MS);
  const plan = await readStdin();
  const runner = new Runner(bootstrap);
  await runner.start();
  try {
    for (const { op, args = [] } of plan) {
      try {
        emit({ op, ok: plain((await runner.run(op, args)) ?? null) });
      } catch (err) {
        emit({ op, error: describeError(err) });
      }
    }
  } finally {
    await runner.close();
  }
  clearTimeout(deadline);
}

main().catch((err) => {
  process.stderr.write(`admin.js failed: ${err.stack || err}\n`);
  process.exit(1);
});
