package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDescribeLogDirsKadm: kadm's DescribeAllLogDirs lists each partition
// with its size on disk, growing as records come, and the file system's
// size; DescribeBrokerConfigs reports connections.max.reauth.ms from
// --sasl-session-lifetime.
func TestDescribeLogDirsKadm(t *testing.T) {
	n := testkit.StartNode(t, node.Config{SASLSessionLifetime: 90 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "dirs"); err != nil {
		t.Fatal(err)
	}
	size := func(p int32) int64 {
		t.Helper()
		all, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			t.Fatalf("describe log dirs: %v", err)
		}
		var got int64 = -1
		all.Each(func(d kadm.DescribedLogDir) {
			if d.Err != nil {
				t.Fatalf("dir %q: %v", d.Dir, d.Err)
			}
			if d.Dir == "" || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
				t.Errorf("dir %q: total %d, usable %d", d.Dir, d.TotalBytes, d.UsableBytes)
			}
			if ps, ok := d.Topics["dirs"]; ok {
				if lp, ok := ps[p]; ok {
					got = lp.Size
				}
			}
		})
		return got
	}
	if s := size(0); s != 0 {
		t.Fatalf("empty partition 0: size %d, want 0", s)
	}
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: "dirs", Partition: 0, Value: fmt.Appendf(nil, "record-%d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if s0, s1 := size(0), size(1); s0 <= 0 || s1 != 0 {
		t.Fatalf("after producing to partition 0: sizes %d and %d", s0, s1)
	}
	bc, err := adm.DescribeBrokerConfigs(ctx, 0) // node 0: a single node
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rc := range bc {
		for _, c := range rc.Configs {
			if c.Key == "connections.max.reauth.ms" {
				found = true
				if c.MaybeValue() != "90000" {
					t.Errorf("connections.max.reauth.ms=%s, want 90000", c.MaybeValue())
				}
			}
		}
	}
	if !found {
		t.Error("connections.max.reauth.ms not described")
	}
}
