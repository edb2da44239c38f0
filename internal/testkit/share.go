package testkit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareHold is ShareConsume's answer for a record to leave acquired by
// the consumer: not acknowledged, so that a test can look at records in
// flight.
const ShareHold kgo.AckStatus = 0

// ShareConsume polls share consumer c (kgo.ShareGroup, KIP-932) until it
// has been given n records, counting a record given again (released,
// its lock expired) each time, and acknowledges each as ack says:
// kgo.AckAccept, AckReject or AckRelease; or ShareHold, which leaves it
// acquired by c until c closes (franz-go then releases it) or its lock
// expires (share.record.lock.duration.ms; c's ConnIdleTimeout should
// outlast the test too, since the broker releases a closed connection's
// records). It flushes the acknowledgements and returns the records
// given, in order.
//
// franz-go accepts at each poll the records of the previous poll left
// unacknowledged, so records can be held only in the last poll: the test
// fails if more come after a poll that held some. A test that holds
// records gives them in one poll by producing them as one batch
// (ProduceBatch) after every record before them is acknowledged.
func ShareConsume(ctx context.Context, t testing.TB, c *kgo.Client, n int, ack func(*kgo.Record) kgo.AckStatus) []*kgo.Record {
	t.Helper()
	var got []*kgo.Record
	held := 0
	for len(got) < n {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("share consumer given %d of %d records: %v", len(got), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("share poll: %s/%d: %v", topic, p, err) })
		if fs.NumRecords() > 0 && held > 0 {
			t.Fatalf("share consumer given more records after a poll that held %d: that poll accepted them", held)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, r)
			if s := ack(r); s == ShareHold {
				held++
			} else {
				r.Ack(s)
			}
		})
	}
	if len(got) != n {
		t.Fatalf("share consumer given %d records, want %d", len(got), n)
	}
	if err := c.FlushAcks(ctx); err != nil {
		t.Fatalf("flush share acknowledgements: %v", err)
	}
	return got
}

// ProduceBatch produces values to topic's partition as one record batch,
// so that a fetch gets them all or none: a share consumer is given them
// in one poll (ShareConsume).
func ProduceBatch(ctx context.Context, t testing.TB, addr, topic string, partition int32, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ManualFlushing(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	errs := make(chan error, len(values))
	for _, v := range values {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}, func(_ *kgo.Record, err error) { errs <- err })
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("produce a batch to %s/%d: %v", topic, partition, err)
	}
	for range values {
		if err := <-errs; err != nil {
			t.Fatalf("produce a batch to %s/%d: %v", topic, partition, err)
		}
	}
}

// ShareConsumer is a franz-go share consumer of group on topics at addr,
// named clientID, closed at the test's end, whose connections stay open
// while a test holds records (ShareHold) without polling.
func ShareConsumer(t testing.TB, addr, group, clientID string, topics ...string) *kgo.Client {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topics...), kgo.ClientID(clientID),
		kgo.ConnIdleTimeout(10*time.Minute))
	if err != nil {
		t.Fatalf("share consumer %s of %s: %v", clientID, group, err)
	}
	t.Cleanup(c.Close)
	return c
}

// ShareInFlight gives share group group records in flight, with a real
// client: it produces 10 records to partition 0 of topic (which must
// have two partitions and no records) and 4 to partition 1, sets the
// group's share.auto.offset.reset to earliest, and a franz-go share
// consumer named clientID (ShareConsumer) settles all 14: partition 0's
// offsets 2 and 7 rejected, the rest accepted. Six more records of
// partition 0 are then given to it in one poll: it rejects 12, accepts
// 13, releases 11 (which its next fetch takes again, delivered twice)
// and holds 10, 14 and 15. It returns the consumer, still running.
//
// Once the released record is taken again, partition 0 has start offset
// 10 and end offset 16, 6 records in flight of which 4 acquired, 1
// acknowledged, 1 archived and 1 redelivered, and a lag (KIP-1226) of
// 16 - 10 - 2 = 4; partition 1 has start offset 4, nothing in flight and
// no lag. The node's share.record.lock.duration.ms (or the group's)
// must outlast the test.
func ShareInFlight(ctx context.Context, t testing.TB, addr, group, topic, clientID string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p, count := range []int{10, 4} {
		var rs []*kgo.Record
		for i := range count {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(strconv.Itoa(i))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	// The records produced before the group's first fetch are delivered.
	SetConfig(t, addr, kmsg.ConfigResourceTypeGroupConfig, group, "share.auto.offset.reset", "earliest")
	c := ShareConsumer(t, addr, group, clientID, topic)
	ShareConsume(ctx, t, c, 14, func(r *kgo.Record) kgo.AckStatus {
		if r.Partition == 0 && (r.Offset == 2 || r.Offset == 7) {
			return kgo.AckReject
		}
		return kgo.AckAccept
	})
	ProduceBatch(ctx, t, addr, topic, 0, "10", "11", "12", "13", "14", "15")
	ShareConsume(ctx, t, c, 6, func(r *kgo.Record) kgo.AckStatus {
		return map[int64]kgo.AckStatus{11: kgo.AckRelease, 12: kgo.AckReject, 13: kgo.AckAccept}[r.Offset]
	})
	return c
}
