// Drives kafkajs consumer groups for e2e/groups_ext_test.go:
// node groups.mjs SPEC.json.
//
// Starts spec.modes.length consumers in one classic group (spec.group,
// kafkajs's RoundRobinAssigner, autocommit after every batch), each with a
// Kafka instance and client id of its own, subscribed to spec.topic from the
// beginning; consumer i runs with eachMessage or eachBatch as spec.modes[i]
// says. Each reports, as JSON lines tagged with its index c:
//
//   assigned   its member id and partitions (the GROUP_JOIN event)
//   revoked    a rebalance it noticed (REBALANCING), before it rejoins
//   rec        every record it processes
//   committed  the offsets it committed (COMMIT_OFFSETS)
//   crash      a CRASH event: the test fails on any
//
// Commands come on stdin, one a line:
//
//   admin      the admin client's listGroups, describeGroups (member
//              metadata and assignments decoded) and fetchOffsets, as
//              groups, described and group_offsets lines, then admin_done
//   leave N    consumer N disconnects (leaving the group), then closed
//
// At the end of stdin the other consumers disconnect likewise and the
// script prints done.
import { createInterface } from 'node:readline';
import kafkajs from 'kafkajs';
import { readSpec, out, b64 } from './common.mjs';

const { Kafka, AssignerProtocol, logLevel } = kafkajs;
const spec = readSpec(process.argv[2]);

// Logs go to stderr, which the test shows on failure.
const levelNames = Object.fromEntries(Object.entries(logLevel).map(([name, n]) => [n, name]));
const logCreator = () => ({ namespace, level, log }) => {
  const { message, ...extra } = log;
  process.stderr.write(`kafkajs ${levelNames[level] ?? level} ${namespace}: ${message} ${JSON.stringify(extra)}\n`);
};
const kafka = (clientId) => new Kafka({
  clientId,
  brokers: [spec.bootstrap],
  logLevel: logLevel[spec.log_level ?? 'INFO'],
  logCreator,
  retry: { retries: 5 },
});

const rec = (c, partition, m) => out({
  kind: 'rec', c, p: partition, o: Number(m.offset), ts: Number(m.timestamp),
  k: b64(m.key), v: b64(m.value),
  h: Object.entries(m.headers ?? {}).map(([k, v]) => [k, b64(v)]),
});

const consumers = spec.modes.map((mode, c) => {
  const consumer = kafka(`${spec.client_id}-${c}`).consumer({
    groupId: spec.group,
    sessionTimeout: 6000,
    rebalanceTimeout: 30000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 100,
    allowAutoTopicCreation: false,
  });
  const { GROUP_JOIN, REBALANCING, COMMIT_OFFSETS, CRASH } = consumer.events;
  consumer.on(GROUP_JOIN, ({ payload }) => out({
    kind: 'assigned', c, member: payload.memberId, leader: payload.isLeader, protocol: payload.groupProtocol,
    partitions: [...(payload.memberAssignment[spec.topic] ?? [])].sort((a, b) => a - b),
  }));
  consumer.on(REBALANCING, ({ payload }) => out({ kind: 'revoked', c, member: payload.memberId }));
  consumer.on(COMMIT_OFFSETS, ({ payload }) => out({
    kind: 'committed', c, member: payload.memberId, gen: payload.groupGenerationId,
    offsets: Object.fromEntries(payload.topics.filter((t) => t.topic === spec.topic)
      .flatMap((t) => t.partitions.map((p) => [String(p.partition), Number(p.offset)]))),
  }));
  consumer.on(CRASH, ({ payload }) => out({ kind: 'crash', c, error: String(payload.error?.stack ?? payload.error), restart: payload.restart }));
  return { consumer, mode, c };
});

async function start({ consumer, mode, c }) {
  await consumer.connect();
  await consumer.subscribe({ topics: [spec.topic], fromBeginning: true });
  if (mode === 'eachBatch') {
    await consumer.run({
      eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
        for (const m of batch.messages) {
          rec(c, batch.partition, m);
          resolveOffset(m.offset);
        }
        await heartbeat();
      },
    });
  } else {
    await consumer.run({ eachMessage: async ({ partition, message }) => rec(c, partition, message) });
  }
}

async function admin() {
  const adm = kafka(`${spec.client_id}-admin`).admin();
  await adm.connect();
  const { groups } = await adm.listGroups();
  out({ kind: 'groups', groups: groups.map((g) => [g.groupId, g.protocolType]).sort() });
  const described = await adm.describeGroups([spec.group]);
  for (const g of described.groups) {
    const members = g.members.map((m) => {
      const md = m.memberMetadata?.length ? AssignerProtocol.MemberMetadata.decode(m.memberMetadata) : null;
      const asg = m.memberAssignment?.length ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null;
      return {
        member: m.memberId, client: m.clientId, host: m.clientHost,
        topics: md ? [...md.topics].sort() : null,
        assigned: asg ? Object.fromEntries(Object.entries(asg.assignment).map(([t, ps]) => [t, [...ps].sort((a, b) => a - b)])) : null,
      };
    }).sort((a, b) => (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
    out({ kind: 'described', error_code: g.errorCode, group: g.groupId, state: g.state, protocol_type: g.protocolType, protocol: g.protocol, members });
  }
  const offsets = await adm.fetchOffsets({ groupId: spec.group, topics: [spec.topic] });
  out({
    kind: 'group_offsets',
    group_offsets: offsets.flatMap((t) => t.partitions.map((p) => ({ topic: t.topic, p: p.partition, offset: Number(p.offset), metadata: p.metadata })))
      .sort((a, b) => a.p - b.p),
  });
  await adm.disconnect();
  out({ kind: 'admin_done' });
}

try {
  await Promise.all(consumers.map(start));
  // Commands, one at a time, until stdin closes.
  const leave = async (m) => {
    if (m.left) return;
    m.left = true;
    await m.consumer.disconnect();
    out({ kind: 'closed', c: m.c });
  };
  for await (const line of createInterface({ input: process.stdin })) {
    const cmd = line.trim().split(/\s+/);
    if (cmd[0] === 'admin' && cmd.length === 1) await admin();
    else if (cmd[0] === 'leave' && cmd.length === 2 && consumers[Number(cmd[1])]) await leave(consumers[Number(cmd[1])]);
    else if (cmd[0] !== '') throw new Error(`unknown command ${JSON.stringify(line)}`);
  }
  await Promise.all(consumers.map(leave));
  out({ kind: 'done' });
  process.exit(0);
} catch (err) {
  process.stderr.write(`kafkajs groups: ${err?.stack ?? err}\n${JSON.stringify(err, null, 1)}\n`);
  process.exit(1);
}
