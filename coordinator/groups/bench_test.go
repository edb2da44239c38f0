package groups_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkOffsetCommit is the machine's share of the commit benchmark
// (`cohort bench commits`): a simple OffsetCommit (v8, generation -1) of
// 10 partitions to one of 64 groups, handled and its records taken, as
// the runtime does. allocs/op is what one commit allocates in the shard's
// loop.
func BenchmarkOffsetCommit(b *testing.B) {
	s := groups.New(testConfig())
	s.Loaded(epoch)
	reqs := make([]*kmsg.OffsetCommitRequest, 64)
	for i := range reqs {
		reqs[i] = simpleCommit(fmt.Sprintf("cohort-bench-commits-%d", i), "cohort-bench-commits", 10)
	}
	var id machine.RequestID
	for _, r := range reqs { // the first commit creates each group
		id++
		s.Handle(epoch, machine.Request{ID: id, Msg: r, ClientID: "bench", ClientHost: "/127.0.0.1"})
	}
	b.ReportAllocs()
	for b.Loop() {
		id++
		r := reqs[int(id)%len(reqs)]
		for i := range r.Topics[0].Partitions {
			r.Topics[0].Partitions[i].Offset++
		}
		out := s.Handle(epoch, machine.Request{ID: id, Msg: r, ClientID: "bench", ClientHost: "/127.0.0.1"})
		if len(out.Records) != 10 || len(out.Replies) != 1 {
			b.Fatalf("%d records, %d replies", len(out.Records), len(out.Replies))
		}
	}
}

// BenchmarkSweepQuiet: the retention sweep (every RetentionCheck) of a
// shard of 62,500 simple groups of 4 offsets (a million on a node's 16
// shards) none of which has expired: what a node pays every ten
// minutes to find nothing to do.
//
// every-group is a sweep of every group (as after a load); due is the
// sweep of every RetentionCheck after that, which visits the groups
// touched since and those come due (none here).
func BenchmarkSweepQuiet(b *testing.B) {
	const n = 62500
	for _, name := range []string{"every-group", "due"} {
		b.Run(name, func(b *testing.B) {
			s := quietShard(b, n)
			if name == "every-group" {
				groups.SweepAll(s)
			}
			now := epoch.Add(time.Hour) // well within the retention
			groups.Sweep(s, now)
			b.ReportAllocs()
			for b.Loop() {
				groups.Sweep(s, now)
			}
			if out := s.Handle(now, machine.Request{ID: 1 << 40, Msg: kmsg.NewPtrListGroupsRequest()}); len(out.Replies) != 1 {
				b.Fatalf("%d replies", len(out.Replies))
			} else if left := len(out.Replies[0].Resp.(*kmsg.ListGroupsResponse).Groups); left != n {
				b.Fatalf("%d groups left, want %d", left, n)
			}
		})
	}
}

// quietShard is a loaded shard of n simple groups, each made by one
// OffsetCommit of 4 partitions.
func quietShard(b *testing.B, n int) *groups.Shard {
	s := groups.New(testConfig())
	s.Loaded(epoch)
	for i := range n {
		r := simpleCommit(fmt.Sprintf("quiet-%07d", i), "quiet", 4)
		if out := s.Handle(epoch, machine.Request{ID: machine.RequestID(i + 1), Msg: r}); len(out.Records) < 4 {
			b.Fatalf("group %d: %d records", i, len(out.Records))
		}
	}
	return s
}

// simpleCommit is a simple group's OffsetCommit (v8, generation -1) of
// offset 1 of partitions 0 to n-1 of topic.
func simpleCommit(group, topic string, n int32) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.Generation = 8, group, -1
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	for p := range n {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, 1, -1
		t.Partitions = append(t.Partitions, rp)
	}
	r.Topics = append(r.Topics, t)
	return r
}
