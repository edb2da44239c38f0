package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

// benchJSON runs `cohort bench args... --format json` against brokers,
// which must succeed, and decodes its output into v.
func benchJSON(t *testing.T, v any, brokers string, args ...string) {
	t.Helper()
	args = append(append([]string{"bench"}, args...), "--brokers", brokers, "--format", "json")
	code, out, errOut := cliRun(args...)
	if code != 0 {
		t.Fatalf("cohort %v: exit %d: %s", args, code, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("cohort %v: decode %q: %v", args, out, err)
	}
}

// TestBenchAgainstNode runs every `cohort bench` workload, small, against
// a real node over TCP and checks what it reports is consistent: commits
// were made and counted, the members of a join all came into one
// generation (the node's initial rebalance delay, Kafka's 3 s, holds it
// open while they arrive) and all got their assignment, heartbeats were
// answered. Nothing is asserted about timing.
func TestBenchAgainstNode(t *testing.T) {
	addr := testkit.StartNode(t, node.Config{HTTPListen: "-"}).KafkaAddr()

	t.Run("commits", func(t *testing.T) {
		t.Parallel()
		var r commitsResult
		benchJSON(t, &r, addr, "commits", "--duration", "1s", "--committers", "4")
		if r.Workload != "commits" || r.Committers != 4 || r.PartitionsPerCommit != 10 {
			t.Fatalf("result %+v: not the run asked for", r)
		}
		if r.Commits <= 0 || r.Offsets != r.Commits*10 {
			t.Fatalf("result %+v: want commits > 0 and offsets = 10 x commits", r)
		}
		if r.OffsetsPerSec <= 0 || r.P99Ms < r.P50Ms {
			t.Fatalf("result %+v: want a positive rate and p99 >= p50", r)
		}
	})
	t.Run("join", func(t *testing.T) {
		t.Parallel()
		var r joinResult
		benchJSON(t, &r, addr, "join", "--members", "20", "--partitions", "40")
		if r.Workload != "join" || r.Members != 20 || r.Partitions != 40 {
			t.Fatalf("result %+v: not the run asked for", r)
		}
		if r.Generations != 1 || r.FinalGeneration != 1 {
			t.Fatalf("result %+v: want every member in generation 1 and no other", r)
		}
		if r.SyncedMembers != 20 {
			t.Fatalf("result %+v: want all 20 members synced", r)
		}
		if r.LastSyncMs < r.AllJoinedMs {
			t.Fatalf("result %+v: the last SyncGroup answer came before the last JoinGroup answer", r)
		}
	})
	t.Run("heartbeats", func(t *testing.T) {
		t.Parallel()
		var r heartbeatsResult
		benchJSON(t, &r, addr, "heartbeats", "--members", "20", "--groups", "2", "--connections", "4", "--partitions", "4", "--duration", "500ms")
		if r.Workload != "heartbeats" || r.Protocol != "classic" || r.Members != 20 || r.Groups != 2 || r.Connections != 4 {
			t.Fatalf("result %+v: not the run asked for", r)
		}
		// Every round heartbeats for every member, and at least one
		// timed round runs.
		if r.Heartbeats < 20 || r.Heartbeats%20 != 0 {
			t.Fatalf("result %+v: want whole rounds of 20 heartbeats, at least one", r)
		}
	})
	t.Run("heartbeats-consumer", func(t *testing.T) {
		t.Parallel()
		// KIP-848 members: they settle (Stable, each at the group's
		// epoch, owning its partitions) before the timed rounds, whose
		// every answer must then be NONE at the same epoch with no new
		// assignment.
		var r heartbeatsResult
		benchJSON(t, &r, addr, "heartbeats", "--protocol", "consumer", "--members", "20", "--groups", "2", "--connections", "4", "--partitions", "4", "--duration", "500ms")
		if r.Workload != "heartbeats" || r.Protocol != "consumer" || r.Members != 20 || r.Groups != 2 || r.Connections != 4 {
			t.Fatalf("result %+v: not the run asked for", r)
		}
		if r.Heartbeats < 20 || r.Heartbeats%20 != 0 {
			t.Fatalf("result %+v: want whole rounds of 20 heartbeats, at least one", r)
		}
	})
}

// TestBenchUsage checks bad command lines exit 2 without touching a
// broker.
func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", "nope"},
		{"bench", "commits", "--committers", "0"},
		{"bench", "heartbeats", "--members", "10", "--groups", "3"},
		{"bench", "heartbeats", "--protocol", "eager"},
		{"bench", "join", "--format", "yaml"},
	} {
		if code, _, _ := cliRun(args...); code != 2 {
			t.Errorf("cohort %v: exit %d, want 2", args, code)
		}
	}
}
