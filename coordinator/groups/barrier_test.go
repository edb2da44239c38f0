package groups_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func join(group, member string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group, r.MemberID, r.ProtocolType = group, member, "consumer"
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 60000
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 1, 0, 1, 't'}}}
	return r
}

// joinID runs the MEMBER_ID_REQUIRED round and parks the second join.
func joinID(t *testing.T, h *harness, group string) (string, machine.RequestID) {
	t.Helper()
	first := do[*kmsg.JoinGroupResponse](h, join(group, ""))
	if first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" {
		t.Fatalf("first join: %+v", first)
	}
	id := h.send(join(group, first.MemberID))
	if _, ok := h.reply(id); ok {
		t.Fatalf("the join of %s was answered at once; it must wait on the barrier", first.MemberID)
	}
	return first.MemberID, id
}

// The classic bug (seed 003): answering each join at once, so that only
// the first of three members ever gets partitions. Three members joining
// during the initial delay must form one generation.
func TestThreeMembersOneGeneration(t *testing.T) {
	h := newHarness(t, testConfig())
	var ids []machine.RequestID
	var members []string
	for i := range 3 {
		m, id := joinID(t, h, "g")
		members, ids = append(members, m), append(ids, id)
		if i < 2 {
			h.advance(time.Second)
		}
	}
	// Kafka's rule: the timer fires at 3 s, saw newcomers, extends to 6 s.
	h.advance(3*time.Second + 999*time.Millisecond)
	for _, id := range ids {
		if _, ok := h.reply(id); ok {
			t.Fatalf("a join was answered before the barrier closed")
		}
	}
	h.advance(time.Millisecond)
	leaders := 0
	for i, id := range ids {
		r, ok := h.reply(id)
		if !ok {
			t.Fatalf("member %d not answered at 6 s", i)
		}
		resp := r.(*kmsg.JoinGroupResponse)
		if resp.ErrorCode != 0 || resp.Generation != 1 || resp.MemberID != members[i] {
			t.Fatalf("member %d: %+v", i, resp)
		}
		if resp.LeaderID == resp.MemberID {
			leaders++
			if len(resp.Members) != 3 {
				t.Fatalf("leader got %d members, want 3", len(resp.Members))
			}
		} else if len(resp.Members) != 0 {
			t.Fatalf("follower got the member list")
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders", leaders)
	}
}

// With the quiet window, the same fleet forms one generation as soon as
// nobody new has come for the window.
func TestQuietWindowClosesEarly(t *testing.T) {
	cfg := testConfig()
	cfg.InitialQuiet = 50 * time.Millisecond
	h := newHarness(t, cfg)
	var ids []machine.RequestID
	for range 3 {
		_, id := joinID(t, h, "g")
		ids = append(ids, id)
		h.advance(10 * time.Millisecond)
	}
	// Joined at 0, 10, 20 ms: quiet from 70 ms.
	h.advance(39 * time.Millisecond)
	if _, ok := h.reply(ids[0]); ok {
		t.Fatal("closed before a quiet step")
	}
	h.advance(time.Millisecond)
	for i, id := range ids {
		r, ok := h.reply(id)
		if !ok || r.(*kmsg.JoinGroupResponse).Generation != 1 {
			t.Fatalf("member %d: %v %+v", i, ok, r)
		}
	}
}

// TestAdaptiveBarrier: with the adaptive initial barrier, members that
// arrive at a steady rate (their gaps varying up to threefold around
// it) always form one generation, however fast or slow the rate and
// however many they are; and the barrier closes sooner than the quiet
// window once they stop: within four times the largest gap (fake time in
// the pure machine, not a wall clock). 300 random fleets.
func TestAdaptiveBarrier(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for run := range 300 {
		cfg := testConfig()
		cfg.InitialAdaptive = true
		cfg.InitialQuiet = []time.Duration{50 * time.Millisecond, 500 * time.Millisecond, 3 * time.Second}[rng.IntN(3)]
		h := newHarness(t, cfg)
		n := 2 + rng.IntN(200)
		// The steady gap: from 100 µs to an eighth of the quiet window,
		// the whole fleet within the barrier's upper bound (the 60 s
		// rebalance timeout of join()).
		most := min(cfg.InitialQuiet/8, 50*time.Second/time.Duration(2*n))
		base := 100*time.Microsecond + time.Duration(rng.Int64N(int64(most)))
		var ids []machine.RequestID
		var largest time.Duration
		for i := range n {
			_, id := joinID(t, h, "g")
			ids = append(ids, id)
			if i == n-1 {
				break
			}
			gap := time.Duration(float64(base) * (0.5 + rng.Float64())) // 0.5–1.5× the rate
			largest = max(largest, gap)
			h.advance(gap)
			if _, ok := h.reply(ids[0]); ok {
				t.Fatalf("run %d (%d members every ~%v, quiet %v): the barrier closed after %d arrivals, while they kept coming", run, n, base, cfg.InitialQuiet, i+1)
			}
		}
		stop := h.now
		bound := min(max(4*largest, time.Millisecond), cfg.InitialQuiet)
		for h.now.Sub(stop) <= bound+time.Millisecond {
			if _, ok := h.reply(ids[0]); ok {
				break
			}
			h.advance(time.Millisecond)
		}
		if took := h.now.Sub(stop); took > bound+time.Millisecond {
			t.Fatalf("run %d: closed %v after the last arrival, want within %v", run, took, bound)
		}
		for i, id := range ids {
			r, ok := h.reply(id)
			if !ok || r.(*kmsg.JoinGroupResponse).Generation != 1 {
				t.Fatalf("run %d: member %d of %d not in generation 1: %v %+v", run, i, n, ok, r)
			}
		}
	}
}
