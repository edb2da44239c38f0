"""Drives kafka-python (Debian's python3-kafka) over a SASL_SSL listener
for e2e/security_clients_test.go.

Usage: /usr/bin/python3 -I kafka_python_sasl.py SPEC.json

Produces spec["records"] records to spec["topic"], consumes them in group
spec["group"] (manual commits, committed synchronously after each poll)
and prints one JSON line: {"produced": N, "consumed": M}. Any failure exits
non-zero with a traceback on stderr; the Go test checks the committed
offsets itself.
"""

import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer

spec = json.load(open(sys.argv[1]))
common = dict(
    bootstrap_servers=[spec["bootstrap"]],
    security_protocol="SASL_SSL",
    sasl_mechanism=spec["mechanism"],
    sasl_plain_username=spec["user"],
    sasl_plain_password=spec["password"],
    ssl_cafile=spec["ca"],
    ssl_check_hostname=True,
    api_version_auto_timeout_ms=20000,
)

producer = KafkaProducer(acks="all", **common)
for i in range(spec["records"]):
    producer.send(spec["topic"], value=b"py-%d" % i).get(timeout=20)
producer.flush()
producer.close()

consumer = KafkaConsumer(
    spec["topic"],
    group_id=spec["group"],
    enable_auto_commit=False,
    auto_offset_reset="earliest",
    **common,
)
consumed = 0
deadline = time.time() + 40
while consumed < spec["records"] and time.time() < deadline:
    batch = consumer.poll(timeout_ms=500)
    for recs in batch.values():
        consumed += len(recs)
    if batch:
        consumer.commit()
consumer.close()
print(json.dumps({"produced": spec["records"], "consumed": consumed}))
