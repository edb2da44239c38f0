// Drives kafkajs over a SASL_SSL listener for e2e/security_clients_test.go:
// node sasl.mjs SPEC.json.
//
// Produces spec.records records to spec.topic, consumes them in group
// spec.group (a commit after every batch) and prints one JSON line:
// {"produced": N, "consumed": M}. Any failure exits non-zero; the Go test
// checks the committed offsets itself.
import { readFileSync } from 'node:fs';
import kafkajs from 'kafkajs';
import { out } from './common.mjs';

const { Kafka, logLevel } = kafkajs;
const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const kafka = new Kafka({
  clientId: 'cohort-e2e-kafkajs-sasl',
  brokers: [spec.bootstrap],
  ssl: { ca: [readFileSync(spec.ca, 'utf8')] },
  sasl: { mechanism: spec.mechanism.toLowerCase(), username: spec.user, password: spec.password },
  logLevel: logLevel.WARN,
});

const producer = kafka.producer();
await producer.connect();
const messages = Array.from({ length: spec.records }, (_, i) => ({ value: `js-${i}` }));
await producer.send({ topic: spec.topic, messages });
await producer.disconnect();

const consumer = kafka.consumer({ groupId: spec.group });
await consumer.connect();
await consumer.subscribe({ topic: spec.topic, fromBeginning: true });
let consumed = 0;
const finished = new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`consumed ${consumed} of ${spec.records}`)), 40000);
  consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch, resolveOffset, commitOffsetsIfNecessary }) => {
      for (const m of batch.messages) resolveOffset(m.offset);
      await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }]);
      consumed += batch.messages.length;
      if (consumed >= spec.records) {
        clearTimeout(timer);
        resolve();
      }
    },
  });
});
await finished;
await consumer.disconnect();
out({ produced: spec.records, consumed });
