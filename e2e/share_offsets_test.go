package e2e

// The share group offset APIs (KIP-932, KIP-1226) against `cohort serve`
// with real clients: franz-go's share consumer (kgo.ShareGroup) makes the
// share-partition state, and kadm's DescribeShareGroupOffsets,
// AlterShareGroupOffsets and DeleteShareGroupOffsets read and change it.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupOffsets: a share consumer reads and accepts every record
// of two partitions; kadm then describes each partition's start offset
// at the end and a lag of 0, and the lag of records produced since.
// Altering the start offsets while the consumer runs is NON_EMPTY_GROUP;
// once it has left, they are altered, described, and a new consumer gets
// exactly the records from them again. Deleting the group's offsets
// leaves nothing to describe, and the next consumer starts over from
// share.auto.offset.reset.
func TestShareGroupOffsets(t *testing.T) {
	p := testkit.StartBinary(t, t.TempDir())
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ClientID("cohort-e2e-share-offsets"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const topic, group = "share-offsets", "share-offsets-workers"
	createTopic(t, adm, topic, 2)
	produce := func(partition int32, n int) {
		t.Helper()
		var rs []*kgo.Record
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "p%d-%d", partition, i)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	produce(0, 10)
	produce(1, 10)
	// Records produced before the group's first fetch are delivered.
	cfg := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	cfg.Resources = append(cfg.Resources, res)
	if resp, err := cfg.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset: %v %+v", err, resp)
	}

	describe := func() map[int32]kadm.ShareOffset {
		t.Helper()
		ds, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			t.Fatalf("describe: %v", err)
		}
		d := ds[group]
		if d.Err != nil {
			t.Fatalf("describe: %v", d.Err)
		}
		out := map[int32]kadm.ShareOffset{}
		for _, o := range d.Offsets.Sorted() {
			if o.Topic != topic || o.Err != nil {
				t.Fatalf("described %+v", o)
			}
			out[o.Partition] = o
		}
		return out
	}
	want := func(what string, got map[int32]kadm.ShareOffset, starts, lags map[int32]int64) {
		t.Helper()
		if len(got) != len(starts) {
			t.Fatalf("%s: described %+v, want partitions %v", what, got, starts)
		}
		for part, start := range starts {
			if o := got[part]; o.StartOffset != start || o.Lag != lags[part] {
				t.Errorf("%s: partition %d start %d lag %d, want %d and %d", what, part, o.StartOffset, o.Lag, start, lags[part])
			}
		}
	}
	if got := describe(); len(got) != 0 {
		t.Fatalf("before any consumer: %+v", got)
	}

	// consume runs a share consumer until it has accepted n records and
	// returns how many came from each partition, and the consumer,
	// still running.
	consume := func(n int) (map[int32]int, *kgo.Client) {
		t.Helper()
		c, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("cohort-e2e-share-consumer"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[int32]int{}
		total := 0
		deadline := time.Now().Add(groupWait)
		for total < n && time.Now().Before(deadline) {
			pctx, pcancel := context.WithDeadline(ctx, deadline)
			fs := c.PollFetches(pctx)
			pcancel()
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("poll: %v", err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				got[r.Partition]++
				total++
			})
			c.MarkAcks(kgo.AckAccept)
		}
		if total != n {
			c.Close()
			t.Fatalf("consumed %d records (%v), want %d", total, got, n)
		}
		if err := c.FlushAcks(ctx); err != nil {
			t.Fatalf("flush acks: %v", err)
		}
		return got, c
	}

	got, c := consume(20)
	c.Close() // leaves the group
	if got[0] != 10 || got[1] != 10 {
		t.Errorf("first consumer: %v, want 10 of each partition", got)
	}
	testkit.Eventually(t, groupWait, "the acceptances described", func() bool {
		d := describe()
		return d[0].StartOffset == 10 && d[1].StartOffset == 10
	})
	want("all accepted", describe(), map[int32]int64{0: 10, 1: 10}, map[int32]int64{0: 0, 1: 0})
	produce(0, 5)
	want("five more", describe(), map[int32]int64{0: 10, 1: 10}, map[int32]int64{0: 5, 1: 0})

	// Altering needs an empty group.
	got, c = consume(5)
	if got[0] != 5 {
		t.Errorf("second consumer: %v, want the five new records of partition 0", got)
	}
	_, err = adm.AlterShareGroupOffsets(ctx, group, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 0}}})
	if !errors.Is(err, kerr.NonEmptyGroup) {
		t.Errorf("alter while a consumer runs: %v, want NON_EMPTY_GROUP", err)
	}
	c.Close()
	testkit.Eventually(t, groupWait, "the group empty", func() bool {
		gs, err := adm.DescribeShareGroups(ctx, group)
		return err == nil && len(gs[group].Members) == 0
	})
	alt, err := adm.AlterShareGroupOffsets(ctx, group, kadm.Offsets{topic: {
		0: {Topic: topic, Partition: 0, At: 0},
		1: {Topic: topic, Partition: 1, At: 5},
	}})
	if err != nil || alt.Error() != nil {
		t.Fatalf("alter: %v %v", err, alt.Error())
	}
	want("altered", describe(), map[int32]int64{0: 0, 1: 5}, map[int32]int64{0: 15, 1: 5})
	got, c = consume(20)
	c.Close()
	if got[0] != 15 || got[1] != 5 {
		t.Errorf("after the alteration: %v, want 15 of partition 0 and 5 of partition 1", got)
	}
	testkit.Eventually(t, groupWait, "the redelivered records accepted", func() bool {
		d := describe()
		return d[0].StartOffset == 15 && d[1].StartOffset == 10
	})

	// Deleting the offsets: nothing left to describe, and the next
	// consumer starts from the earliest record again.
	testkit.Eventually(t, groupWait, "the group empty", func() bool {
		gs, err := adm.DescribeShareGroups(ctx, group)
		return err == nil && len(gs[group].Members) == 0
	})
	del, err := adm.DeleteShareGroupOffsets(ctx, group, topic, "no-such-topic")
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if e, ok := del.Lookup(topic); !ok || e != nil {
		t.Errorf("delete %s: %v %v", topic, ok, e)
	}
	if e, _ := del.Lookup("no-such-topic"); !errors.Is(e, kerr.UnknownTopicOrPartition) {
		t.Errorf("delete of an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", e)
	}
	if got := describe(); len(got) != 0 {
		t.Errorf("after the deletion: %+v", got)
	}
	got, c = consume(25)
	c.Close()
	if got[0] != 15 || got[1] != 10 {
		t.Errorf("after the deletion: %v, want every record again", got)
	}
}
