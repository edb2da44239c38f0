// Drives @platformatic/kafka's DescribeTopicPartitions v0 for
// e2e/describe_topic_partitions_test.go: node describe_topic_partitions.mjs
// SPEC.json. The client's low-level describeTopicPartitionsV0 API (its own
// request encoder and response decoder, over its own Connection) pages
// through spec.topics (empty: every topic) spec.limit partitions at a
// time, following nextCursor until there is none, and prints each page:
// its partitions and its next cursor. None of the package's clients sends
// this API (they describe topics with Metadata, metadata()), so the script
// calls it directly.
import { Connection, describeTopicPartitionsV0 } from '@platformatic/kafka';
import { readSpec, out } from './common.mjs';

const spec = readSpec(process.argv[2]);
const colon = spec.bootstrap.lastIndexOf(':');
const conn = new Connection('cohort-e2e-dtp');
await conn.connect(spec.bootstrap.slice(0, colon), Number(spec.bootstrap.slice(colon + 1)));

let cursor = null;
for (let page = 0; page < 100; page++) {
  // Throws a ResponseError on any topic or partition error.
  const resp = await describeTopicPartitionsV0.api.async(conn, spec.topics.map((name) => ({ name })), spec.limit, cursor);
  const described = [];
  for (const t of resp.topics) {
    for (const p of t.partitions) {
      described.push({
        topic: t.name, id: t.topicId, internal: t.isInternal, ops: t.topicAuthorizedOperations,
        p: p.partitionIndex, leader: p.leaderId, epoch: p.leaderEpoch, replicas: p.replicaNodes, isr: p.isrNodes,
        elr: p.eligibleLeaderReplicas, last_known_elr: p.lastKnownElr, offline: p.offlineReplicas
      });
    }
  }
  out({ kind: 'page', described, next: resp.nextCursor ?? null });
  if (!resp.nextCursor) break;
  cursor = resp.nextCursor;
}
await conn.close();
out({ kind: 'done' });
