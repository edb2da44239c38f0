package admin_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cohort-dev/cohort/admin"
)

// shareLagSource is one share group of the default organisation with
// parts partitions of topic jobs, each with the same state, and the
// partitions' high watermark 100.
type shareLagSource struct{ parts int }

func (s shareLagSource) Groups(int) ([]admin.GroupOffsets, int) {
	g := admin.GroupOffsets{Org: "default", Group: "workers", Members: 2, Share: map[admin.TopicPartition]admin.SharePartition{}}
	for p := range s.parts {
		g.Share[admin.TopicPartition{Topic: "jobs", Partition: int32(p)}] = admin.SharePartition{StartOffset: 40, EndOffset: 50,
			ShareCounts: admin.ShareCounts{InFlight: 10, Available: 2, Acquired: 5, Acknowledged: 2, Archived: 1, Redelivered: 3}}
	}
	return []admin.GroupOffsets{g}, 0
}

func (s shareLagSource) Partitions() map[admin.TopicPartition]admin.PartitionOffsets {
	return topicEnds("jobs", s.parts, 100)
}

// topicEnds is a source's Partitions: parts partitions of topic, each
// with the high watermark end.
func topicEnds(topic string, parts int, end int64) map[admin.TopicPartition]admin.PartitionOffsets {
	out := map[admin.TopicPartition]admin.PartitionOffsets{}
	for p := range parts {
		out[admin.TopicPartition{Topic: topic, Partition: int32(p)}] = admin.PartitionOffsets{End: end}
	}
	return out
}

func (s shareLagSource) Remote() map[admin.TopicPartition]admin.PartitionOffsets { return nil }

// TestShareMetricsBounded: a share group's per-partition series count
// against --metrics-max-partition-series like a consumer group's; the
// per-topic ones (lag sum, records in flight by state, redelivered) cover
// every partition whatever the bound.
func TestShareMetricsBounded(t *testing.T) {
	for _, c := range []struct {
		max, wantPerPartition int
	}{{10000, 4}, {12, 2}, {-1, 0}} {
		reg := prometheus.NewRegistry()
		// 4 partitions: 8 topic series and 8 share series per partition
		// wanted.
		reg.MustRegister(admin.NewLag(admin.LagConfig{Source: shareLagSource{parts: 4}, MaxPartitionSeries: c.max}))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]*dto.Metric{}
		for _, mf := range mfs {
			got[mf.GetName()] = mf.GetMetric()
		}
		if n := len(got["cohort_sharegroup_lag"]); n != c.wantPerPartition || len(got["cohort_sharegroup_start_offset"]) != n {
			t.Errorf("max %d: %d lag and %d start offset series, want %d", c.max, n, len(got["cohort_sharegroup_start_offset"]), c.wantPerPartition)
		}
		for _, m := range got["cohort_sharegroup_lag"] {
			// 100 - 40 - (2 + 1)
			if v := m.GetGauge().GetValue(); v != 57 {
				t.Errorf("max %d: lag %v, want 57", c.max, v)
			}
		}
		sums := map[string]float64{}
		for _, name := range []string{"cohort_sharegroup_lag_sum", "cohort_sharegroup_records_in_flight", "cohort_sharegroup_records_redelivered"} {
			for _, m := range got[name] {
				k := name
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "state" {
						k += "/" + lp.GetValue()
					}
				}
				sums[k] = m.GetGauge().GetValue()
			}
		}
		want := map[string]float64{
			"cohort_sharegroup_lag_sum": 4 * 57, "cohort_sharegroup_records_redelivered": 4 * 3,
			"cohort_sharegroup_records_in_flight/available": 4 * 2, "cohort_sharegroup_records_in_flight/acquired": 4 * 5,
			"cohort_sharegroup_records_in_flight/acknowledged": 4 * 2, "cohort_sharegroup_records_in_flight/archived": 4 * 1,
		}
		if fmt.Sprint(sums) != fmt.Sprint(want) {
			t.Errorf("max %d: per-topic series %v, want %v", c.max, sums, want)
		}
	}
}

// TestShareLag: KIP-1226's lag, never below 0.
func TestShareLag(t *testing.T) {
	p := admin.SharePartition{StartOffset: 10, EndOffset: 20, ShareCounts: admin.ShareCounts{Acknowledged: 3, Archived: 2}}
	for hwm, want := range map[int64]int64{20: 5, 30: 15, 10: 0, 0: 0} {
		if got := p.Lag(hwm); got != want {
			t.Errorf("lag at high watermark %d: %d, want %d", hwm, got, want)
		}
	}
}
