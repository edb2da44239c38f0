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
// At the end of stdin every consumer closes and the script prints done.
import { createInterface } from 'node:readline';
import { Consumer } from '@platformatic/kafka';
import { readSpec, out } from './common.mjs';

const spec = readSpec(process.argv[2]);
const consumers = new Map(); // c → { consumer, stream, last }

const ownedOf = (consumer) => (consumer.assignments ?? [])
  .filter((a) => a.topic === spec.topic)
  .flatMap((a) => a.partitions)
  .sort((a, b) => a - b);

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
  await s.consumer.close();
  consumers.delete(c);
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
