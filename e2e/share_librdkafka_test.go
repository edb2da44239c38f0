package e2e

// Share groups (KIP-932) against `cohort serve` with a second real share
// consumer beside franz-go's: librdkafka's (the rd_kafka_share_* C API of
// the librdkafka 2.15.1 that confluent-kafka-go bundles), driven through
// the cgo package internal/rdkshare.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/e2e/internal/rdkshare"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rdkShareLog keeps a librdkafka share consumer's log: warnings and
// errors go to the test's log as they come, every line (with the debug
// contexts on) is kept to be shown if the test fails, and protocol
// problems, as TestConfluentProduceConsume reads them, are collected.
type rdkShareLog struct {
	t        *testing.T
	mu       sync.Mutex
	lines    []string
	problems []string
}

func (l *rdkShareLog) log(level int, fac, msg string) {
	line := fmt.Sprintf("%d %s: %s", level, fac, msg)
	if level <= 4 { // LOG_WARNING
		l.t.Logf("librdkafka: %s", line)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	lower := strings.ToLower(msg)
	if rdProblemTags[fac] || strings.Contains(lower, "parse failure") || strings.Contains(lower, "underflow") ||
		strings.Contains(lower, "unsupported_version") || strings.Contains(lower, "invalid_request") ||
		strings.Contains(lower, "corrupt") {
		l.problems = append(l.problems, line)
	}
}

// dump logs the last n lines kept.
func (l *rdkShareLog) dump(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := max(0, len(l.lines)-n)
	l.t.Logf("librdkafka's last %d log lines of %d:\n%s", len(l.lines)-from, len(l.lines), strings.Join(l.lines[from:], "\n"))
}

// TestLibrdkafkaShareConsumer: librdkafka's share consumer, in explicit
// acknowledgement mode, reads 300 records of a three-partition topic
// from a share group whose share.auto.offset.reset is earliest. It
// rejects every record whose key number is a multiple of 10 and accepts
// the others, committing the acknowledgements of every other batch with
// rd_kafka_share_commit_sync (the rest go with the next ShareFetch) and
// the last ones the same way, then closes. Every record is delivered
// exactly once, with a delivery count of 1, and, as kadm describes the
// group's share offsets, every partition's start offset reaches its end
// offset: every record settled.
func TestLibrdkafkaShareConsumer(t *testing.T) {
	p := testkit.StartBinary(t, t.TempDir())
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ClientID("cohort-e2e-rdkshare-admin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const topic, group, n = "rdk-share", "rdk-share-workers", 300
	createTopic(t, adm, topic, 3)
	// Ten produce calls: about ten record batches a partition, so that
	// the consumer's polls (max.poll.records 40, which a share fetch may
	// exceed only to the end of a batch) take several rounds.
	for from := 0; from < n; from += n / 10 {
		var rs []*kgo.Record
		for i := from; i < from+n/10; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "key-%03d", i), Value: fmt.Appendf(nil, "value-%d", i)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets: %v %v", err, ends.Error())
	}
	perPartition := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { perPartition[o.Partition] = o.Offset })
	if len(perPartition) != 3 {
		t.Fatalf("end offsets %v, want 3 partitions", perPartition)
	}
	for part, end := range perPartition {
		if end == 0 || end == n {
			t.Fatalf("partition %d ends at %d: want the keys spread over the partitions (%v)", part, end, perPartition)
		}
	}
	setGroupConfig(ctx, t, cl, group, "share.auto.offset.reset", "earliest")

	logs := &rdkShareLog{t: t}
	c, err := rdkshare.New(map[string]string{
		"bootstrap.servers":          p.Addr,
		"group.id":                   group,
		"client.id":                  "cohort-e2e-rdkshare",
		"share.acknowledgement.mode": "explicit",
		"max.poll.records":           "40",
		"broker.address.family":      "v4",
		"debug":                      "protocol,cgrp,fetch,broker",
	}, logs.log)
	if err != nil {
		t.Fatalf("share consumer: %v", err)
	}
	destroyed := false
	destroy := func() {
		if destroyed {
			return
		}
		destroyed = true
		if err := c.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
	}
	// A failing test shows the end of the log, once the consumer is
	// destroyed: on a failure before the close too, so that no log line
	// comes after the test returns.
	defer func() {
		destroy()
		if t.Failed() {
			logs.dump(300)
		}
	}()
	if err := c.Subscribe(topic); err != nil {
		t.Fatalf("subscribe: %v", err)
	}

	type delivery struct {
		partition int32
		offset    int64
		count     int16
	}
	seen := map[string][]delivery{}
	commit := func(what string) {
		t.Helper()
		res, err := c.CommitSync(10 * time.Second)
		if err != nil {
			t.Errorf("commit (%s): %v", what, err)
		}
		for _, r := range res {
			if r.Err != nil || r.Topic != topic {
				t.Errorf("commit (%s): %s[%d]: %v", what, r.Topic, r.Partition, r.Err)
			}
		}
	}
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	batches, pollErrs := 0, 0
	for len(seen) < n && time.Now().Before(deadline) {
		b, err := c.Poll(min(500*time.Millisecond, time.Until(deadline)))
		if err != nil {
			pollErrs++
			t.Errorf("poll: %v", err)
			if pollErrs == 10 {
				t.Fatal("ten poll errors")
			}
			continue
		}
		if len(b.Messages) == 0 {
			b.Destroy()
			continue
		}
		batches++
		for _, m := range b.Messages {
			if m.Err != nil {
				t.Errorf("record error at %s[%d]@%d: %v", m.Topic, m.Partition, m.Offset, m.Err)
				continue
			}
			key := string(m.Key)
			seen[key] = append(seen[key], delivery{m.Partition, m.Offset, m.DeliveryCount})
			var i int
			if _, err := fmt.Sscanf(key, "key-%d", &i); err != nil || m.Topic != topic {
				t.Errorf("unexpected record %s[%d]@%d key %q", m.Topic, m.Partition, m.Offset, key)
			}
			ack := rdkshare.Accept
			if i%10 == 0 {
				ack = rdkshare.Reject
			}
			if err := c.Acknowledge(m, ack); err != nil {
				t.Errorf("acknowledge %s[%d]@%d: %v", m.Topic, m.Partition, m.Offset, err)
			}
		}
		b.Destroy()
		if batches%2 == 0 {
			commit(fmt.Sprintf("batch %d", batches))
		}
	}
	t.Logf("librdkafka consumed %d distinct keys in %d batches in %v", len(seen), batches, time.Since(start).Round(time.Millisecond))
	commit("last")
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	destroy()

	if len(seen) != n {
		var missing []string
		for i := range n {
			if k := fmt.Sprintf("key-%03d", i); seen[k] == nil {
				missing = append(missing, k)
			}
		}
		t.Errorf("%d keys delivered, want %d; missing (up to 20): %v", len(seen), n, missing[:min(20, len(missing))])
	}
	for key, ds := range seen {
		if len(ds) != 1 || ds[0].count != 1 {
			t.Errorf("%s delivered %+v, want once with a delivery count of 1", key, ds)
		}
	}
	logs.mu.Lock()
	for i, pr := range logs.problems {
		if i == 20 {
			t.Errorf("... %d more", len(logs.problems)-i)
			break
		}
		t.Errorf("librdkafka: %s", pr)
	}
	logs.mu.Unlock()

	// Every record settled: each share-partition's start offset at its
	// partition's end.
	var last string
	settled := testkit.WaitFor(groupWait, func() bool {
		ds, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			last = err.Error()
			return false
		}
		d := ds[group]
		if d.Err != nil {
			last = d.Err.Error()
			return false
		}
		got := map[int32]int64{}
		for _, o := range d.Offsets.Sorted() {
			if o.Topic == topic && o.Err == nil {
				got[o.Partition] = o.StartOffset
			}
		}
		last = fmt.Sprintf("start offsets %v, end offsets %v", got, perPartition)
		for part, end := range perPartition {
			if s, ok := got[part]; !ok || s != end {
				return false
			}
		}
		return true
	})
	if !settled {
		t.Fatalf("not every record settled after %v: %s", groupWait, last)
	}
	t.Log(last)
}
