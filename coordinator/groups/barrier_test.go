package groups_test

import (
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
