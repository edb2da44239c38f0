package admin_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cohort-dev/cohort/admin"
)

// wideLagSource is one consumer group of the default organisation that
// committed offset 10 of each of the parts partitions of topic wide,
// whose high watermarks are 100.
type wideLagSource struct{ parts int }

func (s wideLagSource) Groups(int) ([]admin.GroupOffsets, int) {
	g := admin.GroupOffsets{Org: "default", Group: "readers", Members: 1, Committed: map[admin.TopicPartition]int64{}}
	for p := range s.parts {
		g.Committed[admin.TopicPartition{Topic: "wide", Partition: int32(p)}] = 10
	}
	return []admin.GroupOffsets{g}, 0
}

func (s wideLagSource) Partitions() map[admin.TopicPartition]admin.PartitionOffsets {
	return topicEnds("wide", s.parts, 100)
}

func (s wideLagSource) Remote() map[admin.TopicPartition]admin.PartitionOffsets { return nil }

// TestPartitionSeriesStable: when --metrics-max-partition-series leaves
// some partitions out, every scrape gives series to the same ones, the
// first by topic and partition: of 200 partitions and a bound of 80, the
// topic's series of partitions 0-39 and none of the group's; of 50 and a
// bound of 130, the topic's of all 50 (100 series) and the group's of
// partitions 0-14 (the 30 left). Taken in a map's order, they were
// others at each scrape, and Prometheus saw series come and go.
func TestPartitionSeriesStable(t *testing.T) {
	first := func(n int) []string {
		var out []string
		for p := range n {
			out = append(out, fmt.Sprint(p))
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct{ parts, max, topic, group int }{{200, 80, 40, 0}, {50, 130, 50, 15}} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(admin.NewLag(admin.LagConfig{Source: wideLagSource{parts: c.parts}, MaxPartitionSeries: c.max}))
		partitions := func(name string) []string {
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, mf := range mfs {
				if mf.GetName() != name {
					continue
				}
				for _, m := range mf.GetMetric() {
					for _, lp := range m.GetLabel() {
						if lp.GetName() == "partition" {
							out = append(out, lp.GetValue())
						}
					}
				}
			}
			slices.Sort(out)
			return out
		}
		for scrape := range 5 {
			if got, want := partitions("kafka_topic_partition_current_offset"), first(c.topic); !slices.Equal(got, want) {
				t.Fatalf("%d partitions, bound %d, scrape %d: topic series of partitions %v, want %v", c.parts, c.max, scrape, got, want)
			}
			for _, name := range []string{"kafka_consumergroup_current_offset", "kafka_consumergroup_lag"} {
				if got, want := partitions(name), first(c.group); !slices.Equal(got, want) {
					t.Fatalf("%d partitions, bound %d, scrape %d: %s of partitions %v, want %v", c.parts, c.max, scrape, name, got, want)
				}
			}
		}
	}
}
