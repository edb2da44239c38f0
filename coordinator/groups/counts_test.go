package groups_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// countLog is a groups.GroupCounter that keeps what a shard publishes.
type countLog struct{ sets []string }

func (c *countLog) Set(shard uint16, tenant string, n int) {
	c.sets = append(c.sets, fmt.Sprintf("%d/%s=%d", shard, tenant, n))
}

func (c *countLog) Others(uint16, string) int { return 0 }

// TestCountsPublishedOnceLoaded: a shard that is only replayed (a load
// under way, or the runtime's invariant check rebuilding a machine next
// to the live one) publishes no group counts, which would overwrite the
// live shard's; Loaded publishes them, and live changes after it.
func TestCountsPublishedOnceLoaded(t *testing.T) {
	h := newHarness(t, testConfig())
	commit := func(h *harness, tenant, group string) {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version = 8
		r.Group, r.Generation = group, -1
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = "t"
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Offset, p.LeaderEpoch = 1, -1
		tp.Partitions = append(tp.Partitions, p)
		r.Topics = append(r.Topics, tp)
		h.sendAs(r, tenant, "c")
	}
	commit(h, "acme", "g1")
	commit(h, "acme", "g2")

	cfg := testConfig()
	log := &countLog{}
	cfg.Counts = log
	m := groups.New(cfg)
	if err := machine.ReplaySorted(h.records, m.Replay); err != nil {
		t.Fatal(err)
	}
	if len(log.sets) > 0 {
		t.Fatalf("a replayed shard published counts before Loaded: %v", log.sets)
	}
	m.Loaded(epoch)
	if want := []string{"0/acme=2"}; !slices.Equal(log.sets, want) {
		t.Fatalf("Loaded published %v, want %v", log.sets, want)
	}
	log.sets = nil
	h.m = m
	commit(h, "acme", "g3")
	if want := []string{"0/acme=3"}; !slices.Equal(log.sets, want) {
		t.Fatalf("a new group published %v, want %v", log.sets, want)
	}
}
