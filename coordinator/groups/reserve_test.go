package groups_test

import (
	"testing"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetsTopicReservations: the shard emits the reservations of its
// __consumer_offsets offsets as its own records, first in an event's
// output: one at load covering what the load replayed, then one each time
// the records emitted since come within half a block of the last. They
// replay like every record (the harness checks the one record rule after
// every step), and a reload starts from the largest.
func TestOffsetsTopicReservations(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetsTopicBlock = 8
	h := newHarness(t, cfg)
	reserved := func() int64 {
		t.Helper()
		v, ok := h.records[string(record.OffsetsTopicKey{Shard: 0}.Key())]
		if !ok {
			t.Fatal("no reservation stored")
		}
		o, err := record.DecodeOffsetsTopic(v)
		if err != nil {
			t.Fatal(err)
		}
		return o.Reserved
	}
	if got := reserved(); got != 8 {
		t.Fatalf("reservation at load %d, want a block, 8", got)
	}
	commit := func(partitions int) machine.Output {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version = 8
		r.Group, r.Generation = "g", -1
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = "t"
		for i := range partitions {
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = int32(i), 1, -1
			tp.Partitions = append(tp.Partitions, p)
		}
		r.Topics = append(r.Topics, tp)
		h.nextID++
		out := h.m.Handle(h.now, machine.Request{ID: h.nextID, Msg: r})
		h.apply(out)
		return out
	}
	// The group's record and an offset, then the offset again: 3
	// records, below half a block.
	if out := commit(1); len(out.Records) != 2 || record.IsOffsetsTopicKey(out.Records[0].Key) {
		t.Fatalf("a new group's first offset: %d records, want the group's and the offset's", len(out.Records))
	}
	if out := commit(1); len(out.Records) != 1 {
		t.Fatalf("an offset again: %d records", len(out.Records))
	}
	out := commit(2) // 5 emitted: within half a block of 8
	if len(out.Records) != 3 || !record.IsOffsetsTopicKey(out.Records[0].Key) {
		t.Fatalf("records %d, the first a reservation: %v", len(out.Records), len(out.Records) > 0 && record.IsOffsetsTopicKey(out.Records[0].Key))
	}
	if got := reserved(); got != 5+8 {
		t.Fatalf("reservation %d, want 13", got)
	}
	// A reload: 3 offsets besides the reservation replayed, numbered
	// from 13 on, so the load's reservation is 13 + 3 + 8.
	h.restart()
	if got := reserved(); got != 13+3+8 {
		t.Fatalf("reservation after a reload %d, want 24", got)
	}
	// A shard whose coordinator does not serve the topic writes none.
	plain := groups.New(testConfig())
	if out := plain.Loaded(h.now); len(out.Records) != 0 {
		t.Fatalf("a shard without the topic emitted %d records at load", len(out.Records))
	}
}

// TestOffsetsTopicReserveCmd: records a woken __consumer_offsets
// partition shows again (offsetstopic's lazy partition) count toward the
// shard's reservations, so that the partition never waits for one the
// shard's own records would not have asked for yet.
func TestOffsetsTopicReserveCmd(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetsTopicBlock = 8
	h := newHarness(t, cfg)
	reserve := func(n int64) machine.Output {
		h.nextID++
		out := h.m.Handle(h.now, machine.Request{ID: h.nextID, Cmd: groups.ReserveCmd{Records: n}})
		h.apply(out)
		if len(out.Replies) != 1 || out.Replies[0].To != h.nextID {
			t.Fatalf("replies %+v, want one to the command", out.Replies)
		}
		return out
	}
	// The load reserved up to 8 for nothing replayed: 3 more records
	// stay below half a block away, 4 reach it.
	if out := reserve(3); len(out.Records) != 0 {
		t.Fatalf("3 records: %d emitted, want none", len(out.Records))
	}
	out := reserve(1)
	if len(out.Records) != 1 || !record.IsOffsetsTopicKey(out.Records[0].Key) {
		t.Fatalf("4 records: %d emitted, want a reservation", len(out.Records))
	}
	if o, err := record.DecodeOffsetsTopic(out.Records[0].Value); err != nil || o.Reserved != 4+8 {
		t.Fatalf("reservation %+v %v, want 12", o, err)
	}
	if out := reserve(0); len(out.Records) != 0 {
		t.Fatalf("nothing to reserve: %d emitted", len(out.Records))
	}
}
