// Drives @platformatic/kafka for e2e/js_test.go: node platformatic.mjs
// MODE SPEC.json.
//
//   codecs   print the compression codecs this Node.js offers it.
//   produce  create the topic (admin), then produce every batch of the
//            spec (each with its codec, acks=all), and print each record's
//            acknowledged partition and offset.
//   consume  read the whole topic without a group, with Consumer.fetch
//            (rounds of one Fetch for every unfinished partition, small
//            limits, from offset 0 to the high watermark), print every
//            record, then the offsets listOffsets and
//            listOffsetsWithTimestamps find.
//   delete   listTopics, deleteTopics, listTopics.
import { Admin, Consumer, Producer, compatibilityPartitioner, compressionsAlgorithms } from '@platformatic/kafka';
import { readSpec, out, b64 } from './common.mjs';

const [mode, specPath] = process.argv.slice(2);
const spec = readSpec(specPath);
const base = { clientId: 'cohort-e2e-platformatic', bootstrapBrokers: [spec.bootstrap], retries: 3, timeout: 10000 };

async function codecs() {
  out({ kind: 'codecs', codecs: Object.entries(compressionsAlgorithms).filter(([, c]) => c.available).map(([n]) => n) });
}

async function produce() {
  const admin = new Admin(base);
  const created = await admin.createTopics({ topics: [spec.topic], partitions: spec.partitions, replicas: 1 });
  out({ kind: 'created', created: created.map((c) => ({ name: c.name, partitions: c.partitions })) });
  await admin.close();

  for (const [bi, batch] of spec.batches.entries()) {
    const producer = new Producer({ ...base, acks: -1, idempotent: !!batch.idempotent, autocreateTopics: false });
    const chunk = batch.chunk || batch.records.length;
    for (let lo = 0; lo < batch.records.length; lo += chunk) {
      const recs = batch.records.slice(lo, lo + chunk);
      const messages = recs.map((r) => {
        const m = { topic: spec.topic, timestamp: BigInt(r.ts), headers: new Map(r.h.map(([k, v]) => [Buffer.from(k), v])) };
        if (r.k !== null) m.key = r.k;
        if (r.v !== null) m.value = r.v;
        if (r.p !== null && r.p !== undefined) m.partition = r.p;
        return m;
      });
      const res = await producer.send({ messages, compression: batch.codec, acks: -1, partitioner: compatibilityPartitioner });
      const baseOff = new Map(res.offsets.map((o) => [o.partition, BigInt(o.offset)]));
      const next = new Map();
      for (const [i, m] of messages.entries()) {
        // The client's own choice, the same function it just used.
        const p = m.partition ?? compatibilityPartitioner(m, m.key) % spec.partitions;
        const idx = next.get(p) ?? 0n;
        next.set(p, idx + 1n);
        out({ kind: 'sent', batch: bi, i: lo + i, p, o: baseOff.get(p) + idx });
      }
    }
    await producer.close();
  }
}

async function consume() {
  const consumer = new Consumer({ ...base, groupId: 'unused-no-group-is-joined', maxWaitTime: 500, minBytes: 1, maxBytes: 64 << 10 });
  const md = await consumer.metadata({ topics: [spec.topic] });
  const tmd = md.topics.get(spec.topic);
  out({ kind: 'metadata', id: tmd.id, partitions: tmd.partitionsCount, leaders: tmd.partitions.map((p) => p.leader) });
  const ends = await consumer.listOffsets({ topics: [spec.topic] });
  const begins = await consumer.listOffsets({ topics: [spec.topic], timestamp: -2n });
  const end = ends.get(spec.topic);
  out({ kind: 'bounds', begin: begins.get(spec.topic), end });

  const pos = end.map(() => 0n);
  let fetches = 0;
  while (pos.some((o, p) => o < end[p])) {
    if (++fetches > 10000) throw new Error(`no progress: at ${pos}, end ${end}`);
    const partitions = [];
    for (const [p, o] of pos.entries()) {
      if (o < end[p]) partitions.push({ partition: p, currentLeaderEpoch: -1, fetchOffset: o, lastFetchedEpoch: -1, partitionMaxBytes: 16 << 10 });
    }
    const resp = await consumer.fetch({ node: tmd.partitions[0].leader, topics: [{ topicId: tmd.id, partitions }] });
    if (resp.errorCode !== 0) throw new Error(`fetch error ${resp.errorCode}`);
    for (const t of resp.responses) {
      if (t.topicId !== tmd.id) throw new Error(`fetch answered topic ${t.topicId}, asked ${tmd.id}`);
      for (const pr of t.partitions) {
        if (pr.errorCode !== 0) throw new Error(`fetch partition ${pr.partitionIndex}: error ${pr.errorCode}`);
        if (pr.highWatermark !== end[pr.partitionIndex]) throw new Error(`partition ${pr.partitionIndex}: high watermark ${pr.highWatermark}, listOffsets said ${end[pr.partitionIndex]}`);
        for (const b of pr.records ?? []) {
          for (const r of b.records) {
            const o = b.firstOffset + BigInt(r.offsetDelta);
            if (o < pos[pr.partitionIndex]) continue; // a batch may start before the fetch offset
            if (o !== pos[pr.partitionIndex]) throw new Error(`partition ${pr.partitionIndex}: offset ${o}, expected ${pos[pr.partitionIndex]}`);
            pos[pr.partitionIndex] = o + 1n;
            out({
              kind: 'rec', p: pr.partitionIndex, o, ts: b.firstTimestamp + r.timestampDelta, tstype: (b.attributes >> 3) & 1,
              codec: b.attributes & 7, k: b64(r.key), v: b64(r.value), h: r.headers.map(([k, v]) => [k.toString(), b64(v)]),
            });
          }
        }
      }
    }
  }
  out({ kind: 'fetches', n: fetches });

  for (const ts of spec.times ?? []) {
    const r = await consumer.listOffsetsWithTimestamps({ topics: [spec.topic], timestamp: BigInt(ts) });
    const m = r.get(spec.topic);
    out({ kind: 'by_time', ts, offsets: [...m.entries()].sort((a, b) => a[0] - b[0]).map(([p, x]) => ({ p, offset: x.offset, found_ts: x.timestamp })) });
  }
  await consumer.close();
}

async function del() {
  const admin = new Admin(base);
  out({ kind: 'topics', topics: (await admin.listTopics()).sort() });
  await admin.deleteTopics({ topics: [spec.topic] });
  out({ kind: 'topics_after_delete', topics: (await admin.listTopics()).sort() });
  await admin.close();
}

try {
  await ({ codecs, produce, consume, delete: del })[mode]();
  out({ kind: 'done' });
} catch (err) {
  process.stderr.write(`platformatic ${mode}: ${err?.stack ?? err}\n${JSON.stringify(err, (_, v) => (typeof v === 'bigint' ? String(v) : v), 1)}\n`);
  process.exit(1);
}
