// Drives kafkajs for e2e/js_test.go: node kafkajs.mjs MODE SPEC.json.
//
//   produce  create the topic (admin), read its metadata, then produce
//            every batch of the spec (each with its codec, acks=all), and
//            print each record's acknowledged partition and offset.
//   admin    fetchTopicOffsets, fetchTopicOffsetsByTimestamp for each
//            spec time, listTopics, deleteTopics, listTopics again.
//
// kafkajs has no consumer without a group; the test reads with franz-go.
import kafkajs from 'kafkajs';
import { readSpec, out } from './common.mjs';

const { Kafka, CompressionTypes, Partitioners, logLevel } = kafkajs;
const [mode, specPath] = process.argv.slice(2);
const spec = readSpec(specPath);

// Logs go to stderr, which the test shows on failure.
const logCreator = () => ({ namespace, level, log }) => {
  const { message, ...extra } = log;
  process.stderr.write(`kafkajs ${logLevel[level] ?? level} ${namespace}: ${message} ${JSON.stringify(extra)}\n`);
};
const kafka = new Kafka({
  clientId: 'cohort-e2e-kafkajs',
  brokers: [spec.bootstrap],
  logLevel: logLevel.WARN,
  logCreator,
  retry: { retries: 3 },
});
const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP };

async function produce() {
  const admin = kafka.admin();
  await admin.connect();
  const created = await admin.createTopics({ topics: [{ topic: spec.topic, numPartitions: spec.partitions }], waitForLeaders: true });
  out({ kind: 'created', created });
  // A second create of the same topic is not an error to kafkajs: false.
  out({ kind: 'create_again', created: await admin.createTopics({ topics: [{ topic: spec.topic, numPartitions: spec.partitions }] }) });
  const md = await admin.fetchTopicMetadata({ topics: [spec.topic] });
  out({ kind: 'metadata', topics: md.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => [p.partitionId, p.leader]).sort((a, b) => a[0] - b[0]) })) });
  await admin.disconnect();

  for (const [bi, batch] of spec.batches.entries()) {
    const producer = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner, // murmur2, as Java's
      idempotent: !!batch.idempotent,
      maxInFlightRequests: batch.idempotent ? 1 : undefined,
      allowAutoTopicCreation: false,
    });
    await producer.connect();
    const chunk = batch.chunk || batch.records.length;
    for (let lo = 0; lo < batch.records.length; lo += chunk) {
      const recs = batch.records.slice(lo, lo + chunk);
      const messages = recs.map((r) => {
        const m = { key: r.k, value: r.v, timestamp: String(r.ts), headers: Object.fromEntries(r.h) };
        if (r.p !== null && r.p !== undefined) m.partition = r.p;
        return m;
      });
      const res = await producer.send({ topic: spec.topic, messages, acks: -1, compression: codecs[batch.codec] });
      // Where each record went: kafkajs reports a base offset per
      // partition; records keep their order within a partition.
      const base = new Map(res.map((m) => [m.partition, BigInt(m.baseOffset)]));
      // The partitioner's choices are not reported per message: recompute
      // them the way kafkajs did, through the same partitioner.
      const partitioner = Partitioners.DefaultPartitioner();
      const next = new Map();
      for (const [i, m] of messages.entries()) {
        const p = m.partition ?? partitioner({ topic: spec.topic, partitionMetadata: md.topics[0].partitions, message: m });
        const idx = next.get(p) ?? 0n;
        next.set(p, idx + 1n);
        out({ kind: 'sent', batch: bi, i: lo + i, p, o: base.get(p) + idx });
      }
      for (const m of res) {
        if (m.errorCode !== 0) throw new Error(`produce error ${JSON.stringify(m)}`);
      }
    }
    await producer.disconnect();
  }
}

async function admin() {
  const admin = kafka.admin();
  await admin.connect();
  const offs = await admin.fetchTopicOffsets(spec.topic);
  out({ kind: 'offsets', offsets: offs.map((o) => ({ p: o.partition, offset: o.offset, high: o.high, low: o.low })).sort((a, b) => a.p - b.p) });
  for (const ts of spec.times ?? []) {
    const r = await admin.fetchTopicOffsetsByTimestamp(spec.topic, ts);
    out({ kind: 'by_time', ts, offsets: r.map((o) => ({ p: o.partition, offset: o.offset })).sort((a, b) => a.p - b.p) });
  }
  out({ kind: 'topics', topics: (await admin.listTopics()).sort() });
  await admin.deleteTopics({ topics: [spec.topic] });
  out({ kind: 'topics_after_delete', topics: (await admin.listTopics()).sort() });
  await admin.disconnect();
}

try {
  await ({ produce, admin })[mode]();
  out({ kind: 'done' });
} catch (err) {
  process.stderr.write(`kafkajs ${mode}: ${err?.stack ?? err}\n${JSON.stringify(err, null, 1)}\n`);
  process.exit(1);
}
