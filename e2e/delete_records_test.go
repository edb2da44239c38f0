package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDeleteRecordsClients: kadm's DeleteRecords moves a partition's log
// start, which ListOffsets (kadm's ListStartOffsets) and a franz-go
// consumer starting at the earliest offset see; Sarama's ClusterAdmin
// moves another's; both survive a kill -9 and a restart of the binary.
func TestDeleteRecordsClients(t *testing.T) {
	dir := t.TempDir()
	// Its one group has one member: the default 3 s initial rebalance
	// delay was most of this test's time, waiting for no one.
	args := []string{"--group-initial-rebalance-delay", "100ms"}
	p := testkit.StartBinary(t, dir, args...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "dr"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for part := range int32(2) {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: "dr", Partition: part, Value: fmt.Appendf(nil, "%d-%d", part, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "dr", Partition: 0, At: 4})
	dres, err := adm.DeleteRecords(ctx, offs)
	if err != nil || dres.Error() != nil {
		t.Fatalf("kadm delete records: %v %v", err, dres.Error())
	}
	if r, _ := dres.Lookup("dr", 0); r.LowWatermark != 4 {
		t.Fatalf("low watermark %d, want 4", r.LowWatermark)
	}
	cl.Close()

	sadm, err := sarama.NewClusterAdmin([]string{p.Addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := sadm.DeleteRecords("dr", map[int32]int64{1: 7}); err != nil {
		t.Fatalf("sarama delete records: %v", err)
	}
	sadm.Close()

	p.Kill()
	p = testkit.StartBinary(t, dir, args...)
	cl, err = kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumeTopics("dr"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, "dr")
	if err != nil || starts.Error() != nil {
		t.Fatalf("list start offsets: %v %v", err, starts.Error())
	}
	for part, want := range map[int32]int64{0: 4, 1: 7} {
		if o, _ := starts.Lookup("dr", part); o.Offset != want {
			t.Fatalf("partition %d starts at %d after a restart, want %d", part, o.Offset, want)
		}
	}
	// A consumer from the start reads the 6 + 3 records left, none below.
	got := map[int32][]int64{}
	for n := 0; n < 9; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v (%d records so far)", err, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r.Offset)
			n++
		})
	}
	if len(got[0]) != 6 || got[0][0] != 4 || len(got[1]) != 3 || got[1][0] != 7 {
		t.Fatalf("consumed offsets %v, want 4-9 and 7-9", got)
	}

	// A commit below the log start is taken, as Kafka takes it (it does
	// not check offsets against the log), and the lag counts from it; a
	// group consumer resuming there is told OFFSET_OUT_OF_RANGE and
	// resets to the log start by its policy.
	adm = kadm.NewClient(cl)
	below := kadm.Offsets{}
	below.Add(kadm.Offset{Topic: "dr", Partition: 0, At: 1, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "dr-group", below); err != nil || r.Error() != nil {
		t.Fatalf("commit below the log start: %v %v", err, r.Error())
	}
	lags, err := adm.Lag(ctx, "dr-group")
	if err != nil || lags.Error() != nil {
		t.Fatalf("lag: %v %v", err, lags.Error())
	}
	if l, ok := lags["dr-group"].Lag.Lookup("dr", 0); !ok || l.Lag != 9 {
		t.Fatalf("lag of partition 0 from offset 1: %+v, want 10-1=9", l)
	}
	gc, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumerGroup("dr-group"), kgo.ConsumeTopics("dr"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	first := map[int32]int64{}
	for len(first) < 2 {
		fs := gc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("group poll: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
		})
	}
	if first[0] != 4 || first[1] != 7 {
		t.Fatalf("the group resumed at %v, want the log starts 4 and 7", first)
	}
}
