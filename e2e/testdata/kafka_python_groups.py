"""Drives kafka-python's group consumer and admin client (the Debian
python3-kafka package) against a Cohort node for e2e/groups_ext_test.go.

Usage: /usr/bin/python3 -I kafka_python_groups.py SPEC.json

Starts spec["members"] KafkaConsumers in one classic group (spec["group"],
roundrobin assignor, manual commits), each polling in a thread of its own,
subscribed to spec["topic"] from the beginning. Each consumer reports, as
JSON lines on stdout tagged with its index "c":

  assigned   its member id, generation and partitions, from the rebalance
             listener
  revoked    the partitions it gives up before it rejoins
  rec        every record it polls
  committed  the offsets it committed (synchronously) after each poll
  commit_failed / error  what went wrong

Commands come on stdin, one a line:

  admin      KafkaAdminClient's list_consumer_groups,
             describe_consumer_groups and list_consumer_group_offsets, as
             groups, described and group_offsets lines, then admin_done
  leave N    consumer N closes (leaving the group) and reports closed

At the end of stdin the other consumers close likewise and the script
prints done. Any failure exits non-zero with a traceback on stderr. The Go
test checks everything: this script only reports what the client saw.
"""

import base64
import json
import logging
import sys
import threading
import traceback

from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.errors import CommitFailedError
from kafka.structs import OffsetAndMetadata

TIMEOUT_S = 20  # the Go test kills us well after this

_out_lock = threading.Lock()


def b64(b):
    return None if b is None else base64.b64encode(b).decode()


def out(**kw):
    line = json.dumps(kw, sort_keys=True) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


class Listener(ConsumerRebalanceListener):
    """Reports each consumer's rebalances."""

    def __init__(self, i):
        self.i = i
        self.consumer = None

    def on_partitions_revoked(self, revoked):
        out(kind="revoked", c=self.i, partitions=sorted(tp.partition for tp in revoked))

    def on_partitions_assigned(self, assigned):
        # kafka-python keeps the generation it joined with here; it has no
        # public accessor for the member id.
        gen = self.consumer._coordinator._generation
        out(kind="assigned", c=self.i, member=gen.member_id,
            gen=gen.generation_id,
            partitions=sorted(tp.partition for tp in assigned))


def member(i, spec, stop, failed):
    try:
        listener = Listener(i)
        c = KafkaConsumer(
            bootstrap_servers=[spec["bootstrap"]],
            client_id="%s-%d" % (spec["client_id"], i),
            group_id=spec["group"],
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            partition_assignment_strategy=[RoundRobinPartitionAssignor],
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            max_poll_interval_ms=30000,  # also the rebalance timeout
            fetch_max_wait_ms=100,
        )
        listener.consumer = c
        c.subscribe([spec["topic"]], listener=listener)
        while not stop.is_set():
            offsets = {}
            for tp, recs in c.poll(timeout_ms=100).items():
                for r in recs:
                    out(kind="rec", c=i, p=r.partition, o=r.offset,
                        k=b64(r.key), v=b64(r.value),
                        h=[[k, b64(v)] for k, v in r.headers],
                        ts=r.timestamp, tstype=r.timestamp_type)
                offsets[tp] = OffsetAndMetadata(recs[-1].offset + 1, "")
            if not offsets:
                continue
            try:
                c.commit(offsets)
            except CommitFailedError as e:
                out(kind="commit_failed", c=i, error=str(e))
                continue
            out(kind="committed", c=i,
                offsets={str(tp.partition): om.offset for tp, om in offsets.items()})
        c.close()
        out(kind="closed", c=i)
    except Exception as e:  # reported, and the script exits non-zero
        traceback.print_exc()
        out(kind="error", c=i, error=repr(e))
        failed.set()


def admin(spec):
    adm = KafkaAdminClient(bootstrap_servers=[spec["bootstrap"]],
                           client_id=spec["client_id"] + "-admin",
                           request_timeout_ms=TIMEOUT_S * 1000)
    out(kind="groups", groups=sorted([g[0], g[1]] for g in adm.list_consumer_groups()))
    d = adm.describe_consumer_groups([spec["group"]])[0]
    members = []
    for m in d.members:
        md, asg = m.member_metadata, m.member_assignment
        members.append({
            "member": m.member_id, "client": m.client_id, "host": m.client_host,
            "topics": None if md is None else sorted(md.subscription),
            "assigned": None if asg is None else {t: sorted(ps) for t, ps in asg.assignment},
        })
    out(kind="described", error_code=d.error_code, group=d.group, state=d.state,
        protocol_type=d.protocol_type, protocol=d.protocol,
        members=sorted(members, key=lambda m: m["member"]))
    offs = adm.list_consumer_group_offsets(spec["group"])
    out(kind="group_offsets", group_offsets=sorted(
        ({"topic": tp.topic, "p": tp.partition, "offset": om.offset, "metadata": om.metadata}
         for tp, om in offs.items()), key=lambda o: (o["topic"], o["p"])))
    adm.close()
    out(kind="admin_done")


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    # kafka-python's own log, on stderr, which the test shows on failure.
    logging.basicConfig(stream=sys.stderr, level=spec.get("log_level", "WARNING"),
                        format="%(asctime)s %(threadName)s %(levelname)s %(name)s: %(message)s")
    n = spec["members"]
    stops, failed = [threading.Event() for _ in range(n)], threading.Event()
    threads = [threading.Thread(target=member, args=(i, spec, stops[i], failed), daemon=True)
               for i in range(n)]
    for th in threads:
        th.start()

    def leave(i):
        stops[i].set()
        threads[i].join(timeout=TIMEOUT_S)
        if threads[i].is_alive():
            raise TimeoutError("consumer %d did not close within %ds" % (i, TIMEOUT_S))

    for line in sys.stdin:
        cmd = line.split()
        if cmd == ["admin"]:
            admin(spec)
        elif len(cmd) == 2 and cmd[0] == "leave":
            leave(int(cmd[1]))
        elif cmd:
            raise ValueError("unknown command %r" % line)
    for i in range(n):
        leave(i)
    if failed.is_set():
        sys.exit(1)
    out(kind="done")


if __name__ == "__main__":
    main()
