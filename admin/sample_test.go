package admin

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/topics"
)

// fakeSource answers Inspect with sums and Topics with ts, as they are
// when asked: a test changes them between samples. Like the
// coordinator's, a reading keeps the summaries of the groups that did
// not change (their Offsets and Assigned the same slices).
type fakeSource struct {
	sums []groups.Summary
	ts   []TopicInfo
}

func (s *fakeSource) Node() NodeInfo { return NodeInfo{} }
func (s *fakeSource) Inspect(context.Context) ([]groups.Summary, error) {
	return s.sums, nil
}
func (s *fakeSource) InspectGroup(_ context.Context, tenant, group string) (groups.Summary, bool, error) {
	for _, x := range s.sums {
		if x.Tenant == tenant && x.Group == group {
			return x, true, nil
		}
	}
	return groups.Summary{}, false, nil
}
func (s *fakeSource) Handle(context.Context, string, kmsg.Request) kmsg.Response { return nil }
func (s *fakeSource) GroupConfigs(string, string) []GroupConfig                  { return nil }
func (s *fakeSource) Topics() []TopicInfo                                        { return s.ts }

// quietSource is n groups of the default organisation, each committed on
// 4 partitions of one of 100 topics, nothing changing.
func quietSource(n int) *fakeSource {
	const nTopics, nParts = 100, 4
	src := &fakeSource{}
	for t := range nTopics {
		ti := TopicInfo{Name: topics.Internal("", fmt.Sprintf("topic-%03d", t))}
		for p := range nParts {
			ti.Partitions = append(ti.Partitions, PartitionInfo{Partition: int32(p), LogEndOffset: 1000})
		}
		src.ts = append(src.ts, ti)
	}
	for g := range n {
		s := groups.Summary{Group: fmt.Sprintf("group-%07d", g), ID: fmt.Sprint("cgp_", g), Type: "classic", ProtocolType: "consumer", State: "Empty"}
		topic := fmt.Sprintf("topic-%03d", g%nTopics)
		for p := range nParts {
			s.Offsets = append(s.Offsets, groups.OffsetSummary{Topic: topic, Partition: int32(p), Offset: 900 + int64(g%200), CommitTimestamp: 1_700_000_000_000})
		}
		src.sums = append(src.sums, s)
	}
	return src
}

// BenchmarkSampleQuiet: one lag sample of 100,000 quiet groups of 4
// partitions each, once the window is full.
func BenchmarkSampleQuiet(b *testing.B) {
	src := quietSource(100_000)
	api := NewAPI(APIConfig{Source: src})
	for range 12 {
		api.Sample(context.Background())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		api.Sample(context.Background())
	}
}
