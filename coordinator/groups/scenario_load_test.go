package groups_test

import (
	"testing"
	"time"

	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// §18.3: a loaded member whose recorded rebalance timeout is -1 uses its
// session timeout as its rebalance timeout. The machine never writes -1
// itself, so the record is put in the store by hand (as an older writer
// would have left it) and the shard restarted.
//
// Member a (rebalance -1, session 20 s) and member b (rebalance 5 s) are
// loaded Stable at generation 4. b rejoins with new metadata: the
// rebalance waits max(20 s, 5 s) = 20 s for a, which keeps heartbeating
// but never rejoins; at 20 s a is dropped and b alone gets generation 5.
func TestScenarioLoadRebalanceTimeoutMinusOne(t *testing.T) {
	h := newHarness(t, testConfig())
	proto, leader := "range", "a"
	sub := scnSubscription(0, []string{"t"}, nil)
	h.records[string(record.GroupKey{Group: "g"}.Key())] = record.ClassicGroup{
		ID:             "cgp_01TESTTESTTESTTESTTESTTEST",
		ProtocolType:   "consumer",
		Generation:     4,
		Protocol:       &proto,
		Leader:         &leader,
		StateTimestamp: epoch.UnixMilli(),
		Members: []record.ClassicMember{
			{MemberID: "a", ClientID: "ca", ClientHost: "/10.0.0.1", RebalanceTimeout: -1, SessionTimeout: 20000, Subscription: sub, Assignment: []byte("A")},
			{MemberID: "b", ClientID: "cb", ClientHost: "/10.0.0.2", RebalanceTimeout: 5000, SessionTimeout: 30000, Subscription: sub, Assignment: []byte("B")},
		},
	}.Encode()
	h.restart()

	d := do[*kmsg.DescribeGroupsResponse](h, &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g"}})
	if g := d.Groups[0]; g.State != "Stable" || len(g.Members) != 2 || g.Members[0].ClientHost != "/10.0.0.1" || string(g.Members[1].MemberAssignment) != "B" {
		t.Fatalf("loaded group: %+v", g)
	}

	heartbeat := func(gen int32) int16 {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Version, r.Group, r.Generation, r.MemberID = 4, "g", gen, "a"
		return do[*kmsg.HeartbeatResponse](h, r).ErrorCode
	}
	if code := heartbeat(4); code != 0 {
		t.Fatalf("heartbeat of a loaded member: %v", kerr.ErrorForCode(code))
	}

	j := kmsg.NewPtrJoinGroupRequest()
	j.Version, j.Group, j.MemberID, j.ProtocolType = 9, "g", "b", "consumer"
	j.SessionTimeoutMillis, j.RebalanceTimeoutMillis = 30000, 5000
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: scnSubscription(0, []string{"t", "u"}, nil)}}
	id := h.send(j)

	for i := 0; i < 3; i++ {
		h.advance(6 * time.Second)
		if _, ok := h.reply(id); ok {
			t.Fatalf("b's join answered at %v: the rebalance timeout of a (-1 in the record) must be its 20 s session", h.now.Sub(epoch))
		}
		if code := heartbeat(4); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat of a during the rebalance: %v", kerr.ErrorForCode(code))
		}
	}
	h.advance(2 * time.Second) // 20 s
	r, ok := h.reply(id)
	if !ok {
		t.Fatalf("b's join not answered at 20 s")
	}
	resp := r.(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != 0 || resp.Generation != 5 || resp.LeaderID != "b" || len(resp.Members) != 1 {
		t.Fatalf("b's join: %+v", resp)
	}
}
