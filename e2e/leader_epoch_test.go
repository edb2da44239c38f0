package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/observe/observetest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetForLeaderEpochFranz: franz-go validates a committed offset's
// leader epoch with OffsetForLeaderEpoch (KIP-320) before it fetches from
// it; the answer (epoch 0 ends at the log end) lets it resume exactly at
// the committed offset, not reset.
func TestOffsetForLeaderEpochFranz(t *testing.T) {
	rec := &observetest.Recorder{}
	// Its one group has one member: the default 3 s initial rebalance
	// delay was most of this test's time, waiting for no one.
	cfg := node.Config{Observer: rec}
	cfg.Groups.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	n := testkit.StartNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 1, 1, nil, "epochs"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "epochs", Value: fmt.Appendf(nil, "%d", i)})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Commit offset 6 with its leader epoch, as a consumer that read
	// up to 5 does.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "epochs", Partition: 0, At: 6, LeaderEpoch: 0})
	if r, err := kadm.NewClient(prod).CommitOffsets(ctx, "epochs-group", offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumerGroup("epochs-group"), kgo.ConsumeTopics("epochs"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var first int64 = -1
	for got := 0; got < 4; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if first < 0 {
				first = r.Offset
			}
			got++
		})
	}
	if first != 6 {
		t.Fatalf("resumed at %d, want the committed 6", first)
	}
	key := kmsg.OffsetForLeaderEpoch.Int16()
	snap, ok := rec.Wait(10*time.Second, func(s observetest.Snapshot) bool {
		for _, r := range s.Received {
			if r.Key == key {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("franz-go sent no OffsetForLeaderEpoch (%d requests seen)", len(snap.Received))
	}
}
