package groups_test

import (
	"testing"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkJoinSync is the classic join path: the leader of a one-member
// Stable group rejoins (a rebalance that completes at once, as every
// member has joined) and syncs its assignment, which writes the group's
// record; one rebalance an op.
func BenchmarkJoinSync(b *testing.B) {
	s := groups.New(testConfig())
	now := epoch
	s.Loaded(now)
	var id machine.RequestID
	handle := func(r kmsg.Request) machine.Output {
		id++
		return s.Handle(now, machine.Request{ID: id, Msg: r, ClientID: "bench", ClientHost: "/127.0.0.1"})
	}
	// Joined through MEMBER_ID_REQUIRED and the initial barrier.
	first := handle(join("bench", "")).Replies[0].Resp.(*kmsg.JoinGroupResponse)
	member := first.MemberID
	out := handle(join("bench", member))
	now = now.Add(testConfig().InitialDelay)
	for _, tm := range out.Timers {
		if !tm.At.IsZero() && !tm.At.After(now) {
			s.Fire(now, tm.Key)
		}
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version = 5
	sync.Group, sync.MemberID, sync.Generation = "bench", member, 1
	pt, proto := "consumer", "range"
	sync.ProtocolType, sync.Protocol = &pt, &proto
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}
	if r := handle(sync).Replies; len(r) != 1 || r[0].Resp.(*kmsg.SyncGroupResponse).ErrorCode != 0 {
		b.Fatalf("first sync: %+v", r)
	}
	rejoin := join("bench", member)
	b.ReportAllocs()
	for b.Loop() {
		r := handle(rejoin).Replies
		if len(r) != 1 || r[0].Resp.(*kmsg.JoinGroupResponse).ErrorCode != 0 {
			b.Fatalf("rejoin: %+v", r)
		}
		sync.Generation = r[0].Resp.(*kmsg.JoinGroupResponse).Generation
		if r := handle(sync).Replies; len(r) != 1 || r[0].Resp.(*kmsg.SyncGroupResponse).ErrorCode != 0 {
			b.Fatalf("sync: %+v", r)
		}
	}
}
