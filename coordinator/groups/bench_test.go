package groups_test

import (
	"fmt"
	"testing"

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
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version = 8
		r.Group = fmt.Sprintf("cohort-bench-commits-%d", i)
		r.Generation = -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = "cohort-bench-commits"
		for p := range int32(10) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, 1, -1
			t.Partitions = append(t.Partitions, rp)
		}
		r.Topics = append(r.Topics, t)
		reqs[i] = r
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
