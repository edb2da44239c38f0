"""Drives kafka-python (the Debian python3-kafka package) against a Cohort
node for e2e/python_test.go.

Usage: /usr/bin/python3 kafka_python.py MODE SPEC.json

MODE is produce, consume, admin-create, admin-delete or admin-configs;
SPEC.json is
written by the Go test. Results go to stdout as JSON lines, one object each,
with "kind" saying what it is; bytes are base64. Any failure raises, which
exits non-zero with a traceback on stderr. The Go test checks everything:
this script only reports what the client saw.
"""

import base64
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (ConfigResource, ConfigResourceType, KafkaAdminClient,
                         NewPartitions, NewTopic)
from kafka.errors import KafkaError

TIMEOUT_S = 20  # the Go test kills us well after this


def b64(b):
    return None if b is None else base64.b64encode(b).decode()


def unb64(s):
    return None if s is None else base64.b64decode(s)


def out(**kw):
    sys.stdout.write(json.dumps(kw, sort_keys=True) + "\n")


def produce(spec):
    """Produces spec's batches, one KafkaProducer per compression codec."""
    for bi, batch in enumerate(spec["batches"]):
        codec = batch["codec"] or None
        p = KafkaProducer(
            bootstrap_servers=[spec["bootstrap"]],
            client_id="cohort-e2e-producer",
            acks="all",
            compression_type=codec,
            linger_ms=5,
            retries=0,
            max_block_ms=TIMEOUT_S * 1000,
            request_timeout_ms=TIMEOUT_S * 1000,
        )
        out(kind="partitions_for", codec=batch["codec"],
            partitions=sorted(p.partitions_for(spec["topic"])))
        futures = []
        for r in batch["records"]:
            futures.append(p.send(
                spec["topic"],
                key=unb64(r["k"]),
                value=unb64(r["v"]),
                headers=[(h[0], unb64(h[1])) for h in r["h"]],
                partition=r["p"],
                timestamp_ms=r["ts"],
            ))
        p.flush(timeout=TIMEOUT_S)
        for i, f in enumerate(futures):
            md = f.get(timeout=TIMEOUT_S)
            out(kind="sent", batch=bi, i=i, p=md.partition, o=md.offset,
                ts=md.timestamp)
        p.close(timeout=TIMEOUT_S)


def consume(spec):
    """Reads every assigned partition from its start to its end offset,
    groupless, then asks for offsets by timestamp."""
    c = KafkaConsumer(
        bootstrap_servers=[spec["bootstrap"]],
        client_id="cohort-e2e-consumer",
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="none",
        fetch_max_wait_ms=100,
        max_partition_fetch_bytes=64 << 10,  # several fetches per partition
    )
    topic = spec["topic"]
    parts = sorted(c.partitions_for_topic(topic) or [])
    out(kind="partitions", partitions=parts)
    tps = [TopicPartition(topic, p) for p in parts]
    c.assign(tps)
    c.seek_to_beginning()
    begin = c.beginning_offsets(tps)
    end = c.end_offsets(tps)
    out(kind="bounds", begin={str(tp.partition): o for tp, o in begin.items()},
        end={str(tp.partition): o for tp, o in end.items()})
    deadline = time.time() + TIMEOUT_S
    while any(c.position(tp) < end[tp] for tp in tps):
        if time.time() > deadline:
            raise TimeoutError("positions %s, end %s" % (
                {tp.partition: c.position(tp) for tp in tps}, end))
        for tp, recs in c.poll(timeout_ms=500).items():
            for r in recs:
                out(kind="rec", p=r.partition, o=r.offset, k=b64(r.key),
                    v=b64(r.value), h=[[k, b64(v)] for k, v in r.headers],
                    ts=r.timestamp, tstype=r.timestamp_type)
    for q in spec.get("times", []):
        tp = TopicPartition(topic, q["p"])
        got = c.offsets_for_times({tp: q["ts"]})[tp]
        out(kind="time", p=q["p"], ts=q["ts"],
            o=None if got is None else got.offset,
            found_ts=None if got is None else got.timestamp)
    c.close(autocommit=False)


def error_name(fn):
    """Runs fn and returns the name of the KafkaError it raises, or None."""
    try:
        fn()
    except KafkaError as e:
        return type(e).__name__
    return None


def describe_topic_configs(adm, names):
    res, version = [], None
    for resp in adm.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, n) for n in names]):
        for r in resp.resources:
            error_code, _, _, name, entries = r[:5]
            res.append({"name": name, "error": error_code,
                        "configs": {e[0]: [e[1], e[3]] for e in entries}})
    return res


def admin_create(spec):
    adm = KafkaAdminClient(bootstrap_servers=[spec["bootstrap"]],
                           client_id="cohort-e2e-admin",
                           request_timeout_ms=TIMEOUT_S * 1000)
    a, b = spec["topics"]
    resp = adm.create_topics([
        NewTopic(a, num_partitions=3, replication_factor=1,
                 topic_configs={"retention.ms": "3600000",
                                "cleanup.policy": "delete"}),
        NewTopic(b, num_partitions=1, replication_factor=1),
    ], timeout_ms=TIMEOUT_S * 1000)
    out(kind="created", version=resp.API_VERSION,
        errors=sorted([e[0], e[1]] for e in resp.topic_errors))
    out(kind="create_again", error=error_name(lambda: adm.create_topics(
        [NewTopic(a, num_partitions=1, replication_factor=1)])))
    out(kind="create_invalid", error=error_name(lambda: adm.create_topics(
        [NewTopic(spec["invalid"], num_partitions=1, replication_factor=1,
                  topic_configs={"no.such.config": "1"})])))
    out(kind="topics", topics=sorted(adm.list_topics()))
    out(kind="described", topics=sorted(
        [t["topic"], t["error_code"], len(t["partitions"])]
        for t in adm.describe_topics([a, b])))
    out(kind="configs", resources=describe_topic_configs(adm, [a, b]))
    resp = adm.create_partitions({a: NewPartitions(total_count=5)})
    out(kind="create_partitions", version=resp.API_VERSION,
        errors=[[e[0], e[1]] for e in resp.topic_errors])
    adm.close()


def admin_delete(spec):
    adm = KafkaAdminClient(bootstrap_servers=[spec["bootstrap"]],
                           client_id="cohort-e2e-admin",
                           request_timeout_ms=TIMEOUT_S * 1000)
    resp = adm.delete_topics(spec["topics"], timeout_ms=TIMEOUT_S * 1000)
    out(kind="deleted", version=resp.API_VERSION,
        errors=sorted([e[0], e[1]] for e in resp.topic_error_codes))
    out(kind="delete_again", error=error_name(
        lambda: adm.delete_topics(spec["topics"][:1])))
    out(kind="topics", topics=sorted(adm.list_topics()))
    out(kind="configs", resources=describe_topic_configs(adm, spec["topics"][:1]))
    adm.close()


def admin_configs(spec):
    """alter_configs (AlterConfigs: the resource's whole set of configs)
    then describe_configs, twice; alterations that must be refused; and a
    describe_configs of named configs, with synonyms."""
    adm = KafkaAdminClient(bootstrap_servers=[spec["bootstrap"]],
                           client_id="cohort-e2e-admin",
                           request_timeout_ms=TIMEOUT_S * 1000)
    topic = spec["topic"]

    def alter(kind, i, name, configs):
        resp = adm.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name, configs=configs)])
        out(kind=kind, i=i, version=resp.API_VERSION,
            errors=[[r[3], r[0]] for r in resp.resources],
            messages=[r[1] for r in resp.resources])

    for i, configs in enumerate(spec["sets"]):
        alter("altered", i, topic, configs)
        out(kind="configs", i=i,
            resources=describe_topic_configs(adm, [topic]))
    for i, (name, configs) in enumerate(spec["refused"]):
        alter("refused", i, name, configs)
    out(kind="after_refused", resources=describe_topic_configs(adm, [topic]))
    res, version = [], None
    for resp in adm.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic,
                            configs={n: None for n in spec["named"]})],
            include_synonyms=True):
        version = resp.API_VERSION
        for r in resp.resources:
            res.append({"name": r[3], "error": r[0], "configs": {
                e[0]: [e[1], e[3], [[s[0], s[1], s[2]] for s in e[5]]]
                for e in r[4]}})
    out(kind="named", version=version, named=res)
    adm.close()


def main():
    mode, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        spec = json.load(f)
    {"produce": produce, "consume": consume, "admin-create": admin_create,
     "admin-delete": admin_delete, "admin-configs": admin_configs}[mode](spec)
    out(kind="done")


if __name__ == "__main__":
    main()
