// Drives @platformatic/kafka KIP-848 consumers for
// e2e/consumer_groups_test.go: node consumer848.mjs SPEC.json.
//
// Consumers of one group (spec.group) with groupProtocol 'consumer' read
// spec.topic from the earliest offset, autocommitting. Commands on stdin,
// one a line:
//
//   start N   start consumer N, then print {kind:'started', c:N}
//   stop N    close consumer N (it leaves the group with epoch -1), then
//             print {kind:'stopped', c:N}
//
// Every 5 ms one pass compares each consumer's assignment with the last
// seen and prints the changes, revocations first, as
// {kind:'owned', c, partitions} (all the consumers live in this one event
// loop, so a pass sees them in the order they happened); every record is
// {kind:'rec', c, p, o}; client errors are {kind:'error', c, error}.
//
// Fetches and heartbeats are printed as they are sent, for the test to
// judge the group by what the coordinator was told rather than by when a
// record reached the application:
//
//   {kind:'hb', c, partitions}      a ConsumerGroupHeartbeat is about to
//                                   tell the coordinator that c owns these
//                                   ([] just before close sends the leave)
//   {kind:'fetch', c, f, owners}    c sends Fetch f; owners maps each
//                                   partition asked for to the consumers
//                                   whose clients own it at that moment
//   {kind:'fetched', c, f, ranges}  Fetch f answered [p, first, last]
//                                   offsets, before its records are
//                                   handed to the stream
//
// At the end of stdin every consumer closes and the script prints done.
import { createInterface } from 'node:readline';
import { Consumer, consumerFetchesChannel } from '@platformatic/kafka';
import { readSpec, out } from './common.mjs';

const spec = readSpec(process.argv[2]);
const consumers = new Map(); // c → { consumer, stream, last }
const members = new Map(); // consumer → c, from construction to close
const leaving = new Set(); // consumers closing

const ownedOf = (consumer) => (consumer.assignments ?? [])
  .filter((a) => a.topic === spec.topic)
  .flatMap((a) => a.partitions)
  .sort((a, b) => a - b);

// Fetches, through the client's diagnostics channel: the start runs as the
// request is sent, the asyncStart as its response arrives, before the
// stream pushes the records (a paused stream buffers them and delivers
// them later).
consumerFetchesChannel.subscribe({
  start(ctx) {
    const c = members.get(ctx.client);
    if (c === undefined) return;
    const owners = {};
    for (const t of ctx.options?.topics ?? []) {
      for (const { partition } of t.partitions) {
        owners[partition] = [...members].filter(([consumer]) => ownedOf(consumer).includes(partition)).map(([, m]) => m);
      }
    }
    out({ kind: 'fetch', c, f: ctx.operationId, owners });
  },
  asyncStart(ctx) {
    const c = members.get(ctx.client);
    if (c === undefined || !ctx.result) return;
    const ranges = [];
    for (const t of ctx.result.responses ?? []) {
      for (const { partitionIndex, records } of t.partitions) {
        if (records?.length) {
          const last = records[records.length - 1];
          ranges.push([partitionIndex, records[0].firstOffset, last.firstOffset + BigInt(last.lastOffsetDelta)]);
        }
      }
    }
    if (ranges.length) out({ kind: 'fetched', c, f: ctx.operationId, ranges });
  },
});

const poll = setInterval(() => {
  const changes = [];
  for (const [c, s] of consumers) {
    const now = ownedOf(s.consumer);
    if (now.join(',') !== s.last.join(',')) {
      changes.push({ c, now, shrinks: s.last.some((p) => !now.includes(p)) });
      s.last = now;
    }
  }
  changes.sort((a, b) => Number(b.shrinks) - Number(a.shrinks));
  for (const ch of changes) out({ kind: 'owned', c: ch.c, partitions: ch.now });
}, 5);

async function start(c) {
  const consumer = new Consumer({
    clientId: `${spec.client_id}-${c}`,
    bootstrapBrokers: [spec.bootstrap],
    groupId: spec.group,
    groupProtocol: 'consumer',
    maxWaitTime: 100,
    retries: 5,
  });
  members.set(consumer, c);
  // A heartbeat carries the client's assignment as it is sent. Once the
  // leave is printed, a heartbeat close still sends ahead of it is not:
  // the coordinator reads it before the leave, on the same connection, so
  // leaving it out can only miss a violation, never invent one.
  consumer.on('consumer:heartbeat:start', () => {
    if (!leaving.has(consumer)) out({ kind: 'hb', c, partitions: ownedOf(consumer) });
  });
  consumer.on('error', (e) => out({ kind: 'error', c, error: String(e?.stack ?? e) }));
  const stream = await consumer.consume({ topics: [spec.topic], mode: 'committed', fallbackMode: 'earliest', autocommit: 200 });
  stream.on('data', (m) => out({ kind: 'rec', c, p: m.partition, o: Number(m.offset) }));
  stream.on('error', (e) => out({ kind: 'error', c, error: String(e?.stack ?? e) }));
  consumers.set(c, { consumer, stream, last: [] });
  out({ kind: 'started', c });
}

async function stop(c) {
  const s = consumers.get(c);
  if (!s) return;
  await s.stream.close();
  leaving.add(s.consumer);
  out({ kind: 'hb', c, partitions: [] }); // the leave (epoch -1) close sends
  await s.consumer.close();
  consumers.delete(c);
  members.delete(s.consumer);
  leaving.delete(s.consumer);
  out({ kind: 'owned', c, partitions: [] });
  out({ kind: 'stopped', c });
}

const lines = createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on('line', (line) => {
  const [cmd, n] = line.trim().split(/\s+/);
  queue = queue.then(() => (cmd === 'start' ? start(Number(n)) : cmd === 'stop' ? stop(Number(n)) : null))
    .catch((e) => out({ kind: 'error', c: Number(n), error: String(e?.stack ?? e) }));
});
lines.on('close', () => {
  queue = queue.then(async () => {
    for (const c of [...consumers.keys()]) await stop(c);
    clearInterval(poll);
    out({ kind: 'done' });
  });
});
