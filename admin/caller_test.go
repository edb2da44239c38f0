package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/topics"
)

// tenantsSource has groups groups in each of the tenants "", "acme" and
// "globex", each committed on parts partitions of its own tenant's topic
// events (in the log: events, acme/events, globex/events).
type tenantsSource struct{ groups, parts int }

// tenantEnd is the end offset of each tenant's events partitions: a lag
// read against another tenant's topic of the same name shows.
var tenantEnd = map[string]int64{"": 10, "acme": 20, "globex": 30}

func (s tenantsSource) Node() admin.NodeInfo {
	return admin.NodeInfo{Store: admin.StoreInfo{Kind: "pebble", Path: "/data"}}
}
func (s tenantsSource) Inspect(context.Context) ([]groups.Summary, error) {
	var out []groups.Summary
	for _, tenant := range []string{"", "acme", "globex"} {
		for g := range s.groups {
			sum := groups.Summary{Tenant: tenant, Group: fmt.Sprintf("g%d", g), ID: fmt.Sprintf("cgp_%s%d", tenant, g), Type: groups.ClassicGroup, State: groups.StateEmpty}
			var offs []groups.OffsetSummary
			for p := range s.parts {
				offs = append(offs, groups.OffsetSummary{Topic: "events", Partition: int32(p), Offset: 1})
			}
			sum.Offsets = groups.MakeOffsets(offs)
			out = append(out, sum)
		}
	}
	return out, nil
}
func (s tenantsSource) InspectGroup(context.Context, string, string) (groups.Summary, bool, error) {
	return groups.Summary{}, false, nil
}
func (s tenantsSource) Handle(context.Context, string, kmsg.Request) kmsg.Response { return nil }
func (s tenantsSource) GroupConfigs(string, string) []admin.GroupConfig            { return nil }
func (s tenantsSource) Topics() []admin.TopicInfo {
	var out []admin.TopicInfo
	for _, tenant := range []string{"", "acme", "globex"} {
		ti := admin.TopicInfo{Name: topics.Internal(tenant, "events")}
		for p := range s.parts {
			ti.Partitions = append(ti.Partitions, admin.PartitionInfo{Partition: int32(p), LogEndOffset: tenantEnd[tenant]})
		}
		out = append(out, ti)
	}
	return out
}

type lagOf struct {
	api *admin.API
	src tenantsSource
}

func (l lagOf) Groups(maxSeries int) ([]admin.GroupOffsets, int) {
	return l.api.Groups(maxSeries)
}
func (l lagOf) Partitions() map[admin.TopicPartition]admin.PartitionOffsets {
	out := map[admin.TopicPartition]admin.PartitionOffsets{}
	for _, tenant := range []string{"", "acme", "globex"} {
		for p := range l.src.parts {
			out[admin.TopicPartition{Topic: topics.Internal(tenant, "events"), Partition: int32(p)}] = admin.PartitionOffsets{End: tenantEnd[tenant]}
		}
	}
	return out
}
func (l lagOf) Remote() map[admin.TopicPartition]admin.PartitionOffsets { return nil }

// tenantsHandler is the admin handler over src, whose callers say who
// they are in a header: X-Org (a member of that organisation) or none
// (an operator).
func tenantsHandler(src tenantsSource) http.Handler {
	return tenantsHandlerLag(src, admin.LagConfig{})
}

// tenantsHandlerLag is tenantsHandler with the lag collector's cfg (its
// Source set here).
func tenantsHandlerLag(src tenantsSource, cfg admin.LagConfig) http.Handler {
	api := admin.NewAPI(admin.APIConfig{Source: src, MaxGroupSeries: cfg.MaxGroupSeries})
	api.Sample(context.Background())
	reg := prometheus.NewRegistry()
	cfg.Source = lagOf{api, src}
	reg.MustRegister(api, admin.NewLag(cfg))
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "node_wide", Help: "A series of no organisation."}))
	return admin.Handler(admin.Config{Gatherer: reg, API: api, Caller: func(r *http.Request) admin.Caller {
		if org := r.Header.Get("X-Org"); org != "" {
			return admin.Caller{Principal: "User:x", Tenant: strings.TrimPrefix(org, "default")}
		}
		return admin.Caller{Principal: "User:admin", Operator: true}
	}})
}

// scrapeAll is the operator's scrape, by family.
func scrapeAll(t testing.TB, h http.Handler) map[string]*dto.MetricFamily {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// scrapeFamily is one family of the operator's scrape.
func scrapeFamily(t testing.TB, h http.Handler, name string) []*dto.Metric {
	mfs := scrapeAll(t, h)
	if mfs[name] == nil {
		t.Fatalf("no %s in the scrape", name)
	}
	return mfs[name].GetMetric()
}

func scrapeOrgs(t testing.TB, h http.Handler, org string) map[string][]string {
	req := httptest.NewRequest("GET", "/metrics", nil)
	if org != "" {
		req.Header.Set("X-Org", org)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("/metrics as %q: %d", org, rec.Code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			v := "-"
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "org" {
					v = lp.GetValue()
				}
			}
			if !slices.Contains(out[name], v) {
				out[name] = append(out[name], v)
			}
		}
		slices.Sort(out[name])
	}
	return out
}

// TestMetricsByOrg: every per-group family covers every organisation,
// labelled; a member's scrape has its organisation's series alone, and
// none of the series without an org label.
func TestMetricsByOrg(t *testing.T) {
	h := tenantsHandler(tenantsSource{groups: 2, parts: 2})
	perGroup := []string{"kafka_consumergroup_current_offset", "kafka_consumergroup_lag", "kafka_consumergroup_lag_sum",
		"kafka_consumergroup_current_offset_sum", "kafka_consumergroup_members", "cohort_consumergroup_generation",
		"cohort_groups", "cohort_offsets", "cohort_pending_members", "kafka_topic_partition_current_offset", "kafka_topic_partition_oldest_offset"}
	all := scrapeOrgs(t, h, "")
	for _, f := range perGroup {
		if !slices.Equal(all[f], []string{"acme", "default", "globex"}) {
			t.Errorf("operator's %s: orgs %q", f, all[f])
		}
	}
	// Each group's lag is against its own organisation's events (every
	// group committed offset 1).
	for _, m := range scrapeFamily(t, h, "kafka_consumergroup_lag") {
		org, want := "", float64(0)
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "org" {
				org = lp.GetValue()
			}
		}
		switch org {
		case "default":
			want = 9
		case "acme":
			want = 19
		case "globex":
			want = 29
		}
		if got := m.GetGauge().GetValue(); got != want {
			t.Errorf("kafka_consumergroup_lag of an %s group: %v, want %v", org, got, want)
		}
	}
	if all["node_wide"] == nil {
		t.Errorf("operator's scrape lacks the series of no organisation")
	}
	for _, org := range []string{"acme", "default"} {
		got := scrapeOrgs(t, h, org)
		for _, f := range perGroup {
			if !slices.Equal(got[f], []string{org}) {
				t.Errorf("%s's %s: orgs %q", org, f, got[f])
			}
		}
		for f, orgs := range got {
			if !slices.Equal(orgs, []string{org}) {
				t.Errorf("%s sees %s with orgs %q", org, f, orgs)
			}
		}
	}
}

// TestMetricsGroupBudget: a scrape's per-group series stay within
// MaxGroupSeries, the groups with the most lag kept, and
// cohort_metrics_group_series_dropped counts the rest; within the budget
// every group is there.
func TestMetricsGroupBudget(t *testing.T) {
	// Six groups, two of each organisation, of one topic each: 6 series
	// a group (members, generation, status, time to clear, lag_sum,
	// current_offset_sum), 36 in all. The lag of a partition: default's
	// 9, acme's 19, globex's 29.
	src := tenantsSource{groups: 2, parts: 2}
	for _, c := range []struct {
		max     int
		orgs    []string // of the groups with a members series, sorted
		dropped float64
	}{
		{0, []string{"acme", "acme", "default", "default", "globex", "globex"}, 0}, // the default budget
		{36, []string{"acme", "acme", "default", "default", "globex", "globex"}, 0},
		{35, []string{"acme", "acme", "default", "globex", "globex"}, 6},
		{14, []string{"globex", "globex"}, 24},
		{-1, nil, 36},
	} {
		h := tenantsHandlerLag(src, admin.LagConfig{MaxGroupSeries: c.max})
		var orgs []string
		mfs := scrapeAll(t, h)
		for _, m := range mfs["kafka_consumergroup_members"].GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "org" {
					orgs = append(orgs, lp.GetValue())
				}
			}
		}
		slices.Sort(orgs)
		if !slices.Equal(orgs, c.orgs) {
			t.Errorf("max %d: groups of %q, want %q", c.max, orgs, c.orgs)
		}
		for _, f := range []string{"kafka_consumergroup_lag_sum", "cohort_consumergroup_generation", "cohort_consumergroup_status"} {
			if n := len(mfs[f].GetMetric()); n != len(c.orgs) {
				t.Errorf("max %d: %d %s series, want %d", c.max, n, f, len(c.orgs))
			}
		}
		d := mfs["cohort_metrics_group_series_dropped"].GetMetric()
		if len(d) != 1 || d[0].GetGauge().GetValue() != c.dropped {
			t.Errorf("max %d: cohort_metrics_group_series_dropped %v, want %v", c.max, d, c.dropped)
		}
	}
}

// BenchmarkScrape: one /metrics scrape of 3 organisations × 1,000 groups
// × 4 partitions, by an operator (everything) and by a member (the
// gathered families filtered to a third).
func BenchmarkScrape(b *testing.B) {
	h := tenantsHandler(tenantsSource{groups: 1000, parts: 4})
	for _, who := range []string{"", "acme"} {
		name := "operator"
		if who != "" {
			name = "member"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest("GET", "/metrics", nil)
				if who != "" {
					req.Header.Set("X-Org", who)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// TestGroupLagByOrg: a group's lag in the JSON API is against its own
// organisation's topic, not the topic of that name of another.
func TestGroupLagByOrg(t *testing.T) {
	h := tenantsHandler(tenantsSource{groups: 1, parts: 2})
	for _, c := range []struct {
		org  string
		want int64
	}{{"default", 2 * 9}, {"acme", 2 * 19}, {"globex", 2 * 29}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/groups?org="+c.org, nil))
		var list struct{ Groups []admin.GroupSummary }
		if err := json.NewDecoder(rec.Body).Decode(&list); err != nil || len(list.Groups) != 1 {
			t.Fatalf("%s's groups: %v %+v", c.org, err, list)
		}
		if g := list.Groups[0]; g.TotalLag != c.want {
			t.Errorf("%s's %s: total lag %d, want %d", c.org, g.Group, g.TotalLag, c.want)
		}
	}
}

// slowSource is tenantsSource whose reading of the groups takes wait.
type slowSource struct {
	tenantsSource
	wait time.Duration
}

func (s slowSource) Inspect(ctx context.Context) ([]groups.Summary, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(s.wait):
		return s.tenantsSource.Inspect(ctx)
	}
}

// TestSampleLongerThanInterval: a reading of the groups that takes
// longer than the sample interval is kept, not cut at the interval (a
// reading cut short is read in full again the next time, so a large
// estate's would be cut every time).
func TestSampleLongerThanInterval(t *testing.T) {
	// Longer than the interval and than a second, the least the rest
	// of a sample (the end offsets' refresh) is given.
	const interval, wait = 20 * time.Millisecond, 1500 * time.Millisecond
	api := admin.NewAPI(admin.APIConfig{Source: slowSource{tenantsSource{groups: 2, parts: 1}, wait}, SampleInterval: interval})
	api.Sample(context.Background())
	gs, _ := api.Groups(1000)
	if len(gs) != 6 {
		t.Fatalf("after a reading of %v with a %v interval: %d groups sampled, want 6", wait, interval, len(gs))
	}
}
