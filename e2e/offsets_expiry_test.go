package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

// TestOffsetsExpireKadm: committed offsets of a group with no members
// expire the retention after their commit, and the group with them
// (Kafka's offsets.retention.minutes), seen through kadm: 20 groups that
// commit once go, no sooner than the retention; a group that keeps
// committing stays, its offset readable, and goes once it stops. The
// retention sweep finds the first by when they come due and the second
// because it changed (issue 34), not by visiting every group.
func TestOffsetsExpireKadm(t *testing.T) {
	const retention = 3 * time.Second
	n := testkit.StartNode(t, node.Config{Groups: coordinator.Config{OffsetsRetention: retention, OffsetsRetentionCheckInterval: 200 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "expiring"); err != nil {
		t.Fatal(err)
	}
	commit := func(group string, at int64) {
		t.Helper()
		var os kadm.Offsets
		os.AddOffset("expiring", 0, at, -1)
		os.AddOffset("expiring", 1, at, -1)
		if r, err := adm.CommitOffsets(ctx, group, os); err != nil || r.Error() != nil {
			t.Fatalf("commit %s: %v %v", group, err, r.Error())
		}
	}
	listed := func() map[string]bool {
		t.Helper()
		gs, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, g := range gs.Groups() {
			out[g] = true
		}
		return out
	}
	start := time.Now()
	for i := range 20 {
		commit(fmt.Sprintf("once-%02d", i), int64(i))
	}
	committed := time.Now()
	// The busy group commits every 300 ms until the others are gone.
	var next int64
	for {
		next++
		commit("busy", next)
		if time.Now().After(start.Add(45 * time.Second)) {
			t.Fatal("the groups that committed once are still listed after 45 s")
		}
		ls := listed()
		if !ls["busy"] {
			t.Fatalf("the busy group went, %v after its last commit", time.Since(committed))
		}
		fetched, err := adm.FetchOffsets(ctx, "busy")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := fetched.Lookup("expiring", 0); o.At != next {
			t.Fatalf("busy's offset %d, committed %d", o.At, next)
		}
		left := 0
		for i := range 20 {
			if ls[fmt.Sprintf("once-%02d", i)] {
				left++
			}
		}
		if left == 0 {
			break
		}
		if left < 20 && time.Since(start) < retention {
			t.Fatalf("%d of the groups went %v after their commits, before the retention of %v", 20-left, time.Since(start), retention)
		}
		time.Sleep(300 * time.Millisecond) // the busy group's pace, not a wait for a condition
	}
	gone := time.Since(start)
	if gone < retention {
		t.Fatalf("the groups went %v after their commits", gone)
	}
	// The busy group stops: it goes in turn.
	stopped := time.Now()
	for listed()["busy"] {
		if time.Since(stopped) > 30*time.Second {
			t.Fatal("the busy group is still listed 30 s after its last commit")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if since := time.Since(stopped); since < retention-time.Second {
		t.Fatalf("the busy group went %v after its last commit", since)
	}
	t.Logf("the groups that committed once were gone %v after their commits; the busy one %v after it stopped", gone, time.Since(stopped))
}
