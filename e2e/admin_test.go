package e2e

// The admin HTTP listener of the real binary: health, readiness and
// Prometheus metrics that reflect what real clients did.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	dto "github.com/prometheus/client_model/go"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// scrape parses /metrics with Prometheus's own text parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := httpGet(t, "http://"+addr+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// sample returns the value of the series of family name whose labels
// include labels, or -1.
func sample(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	mf := mfs[name]
	if mf == nil {
		return -1
	}
	total, found := 0.0, false
metrics:
	for _, m := range mf.GetMetric() {
		for k, v := range labels {
			ok := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					ok = true
				}
			}
			if !ok {
				continue metrics
			}
		}
		found = true
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	if !found {
		return -1
	}
	return total
}

func TestAdminHTTP(t *testing.T) {
	p := testkit.StartBinary(t, t.TempDir(), "--group-initial-rebalance-delay", "100ms")
	if p.HTTPAddr == "" {
		t.Fatalf("no admin listener in the log:\n%s", p.Log())
	}
	if code, body := httpGet(t, "http://"+p.HTTPAddr+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := httpGet(t, "http://"+p.HTTPAddr+"/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %q", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	extCreateTopic(t, p.Addr, "metered", 2)
	for range 2 {
		defer pollingMember(ctx, t, kgo.SeedBrokers(p.Addr), kgo.ConsumerGroup("metered-group"), kgo.ConsumeTopics("metered"), kgo.FetchMaxWait(100*time.Millisecond)).Close()
	}
	var mfs map[string]*dto.MetricFamily
	testkit.Eventually(t, 30*time.Second, "no completed rebalance of 2 members in the metrics", func() bool {
		mfs = scrape(t, p.HTTPAddr)
		return sample(mfs, "cohort_rebalance_duration_seconds", map[string]string{"type": "classic"}) >= 1 &&
			sample(mfs, "cohort_group_member_events_total", map[string]string{"type": "classic", "event": "joined"}) >= 2
	})
	for _, c := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"cohort_requests_total", map[string]string{"api": "JoinGroup", "error_code": "0"}, 2},
		{"cohort_requests_total", map[string]string{"api": "SyncGroup", "error_code": "0"}, 2},
		{"cohort_requests_total", map[string]string{"api": "CreateTopics"}, 1},
		{"cohort_request_duration_seconds", map[string]string{"api": "JoinGroup"}, 2},
		{"cohort_rebalances_total", map[string]string{"type": "classic", "cause": "member-joined"}, 1},
		{"cohort_store_batches_total", map[string]string{"outcome": "ok"}, 1},
		{"cohort_store_batch_duration_seconds", nil, 1},
		{"cohort_shards_loaded", nil, 49},
		{"cohort_shard_load_duration_seconds", nil, 49},
		{"go_goroutines", nil, 1},
	} {
		if got := sample(mfs, c.name, c.labels); got < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.min)
		}
	}
	if got := sample(mfs, "cohort_shards_loaded", nil); got != 49 {
		t.Errorf("cohort_shards_loaded = %v, want the 16 group shards, the assigner's, the 16 transaction shards and the 16 share-state shards", got)
	}
}

// TestReadyzWhileAShardIsNotServed: /readyz answers 503, naming why,
// while one of the node's shards is not served, and 200 once it is.
func TestReadyzWhileAShardIsNotServed(t *testing.T) {
	n := testkit.StartNode(t, node.Config{HTTPListen: "127.0.0.1:0"})
	url := "http://" + n.HTTPAddr() + "/readyz"
	if code, body := httpGet(t, url); code != 200 {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	n.Coordinator().Unload(3)
	if code, body := httpGet(t, url); code != 503 || !strings.Contains(body, "1 of 16 coordinator shards not held") {
		t.Fatalf("/readyz with a shard unloaded: %d %q", code, body)
	}
	if err := n.Coordinator().Load(3); err != nil {
		t.Fatal(err)
	}
	if code, body := httpGet(t, url); code != 200 {
		t.Fatalf("/readyz after loading: %d %q", code, body)
	}
	if mfs := scrape(t, n.HTTPAddr()); sample(mfs, "cohort_shard_events_total", map[string]string{"event": "unloaded"}) != 1 {
		t.Errorf("unload not counted: %v", sample(mfs, "cohort_shard_events_total", map[string]string{"event": "unloaded"}))
	}
}

// TestLagMetrics: /metrics carries kafka_exporter's lag series, values
// checked against a known state: a group with no members committed at
// 3, 5 and 10 of three partitions holding 10 records each (lag 7, 5, 0),
// and a live franz-go group of one member that consumed everything.
// With --metrics-max-partition-series 2 the per-partition series are
// left out and counted, and the per-group sums stay.
func TestLagMetrics(t *testing.T) {
	p := testkit.StartBinary(t, t.TempDir(), "--group-initial-rebalance-delay", "100ms", "--lag-sample-interval", "100ms")
	small := testkit.StartBinary(t, t.TempDir(), "--metrics-max-partition-series", "2", "--metrics-max-group-series", "6", "--lag-sample-interval", "100ms", "--lag-history-max-bytes", "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range []*testkit.Proc{p, small} {
		extCreateTopic(t, n.Addr, "lagged", 3)
		var recs []*kgo.Record
		for part := range int32(3) {
			for i := range 10 {
				recs = append(recs, &kgo.Record{Topic: "lagged", Partition: part, Value: fmt.Appendf(nil, "%d", i)})
			}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		offs := kadm.Offsets{}
		for part, at := range []int64{3, 5, 10} {
			offs.Add(kadm.Offset{Topic: "lagged", Partition: int32(part), At: at})
		}
		resp, err := kadm.NewClient(cl).CommitOffsets(ctx, "idle", offs)
		if err == nil {
			err = resp.Error()
		}
		if err == nil && n == small {
			// A group with no lag, which the capped node's group
			// budget (6 series: idle's members, generation, status,
			// time to clear, lag sum and offset sum) leaves out.
			caught := kadm.Offsets{}
			for part := range int32(3) {
				caught.Add(kadm.Offset{Topic: "lagged", Partition: part, At: 10})
			}
			if resp, err = kadm.NewClient(cl).CommitOffsets(ctx, "caught-up", caught); err == nil {
				err = resp.Error()
			}
		}
		cl.Close()
		if err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	live := pollingMember(ctx, t, kgo.SeedBrokers(p.Addr), kgo.ConsumerGroup("live"), kgo.ConsumeTopics("lagged"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond), kgo.AutoCommitInterval(100*time.Millisecond))
	defer live.Close()

	gtp := func(g string, part int) map[string]string {
		return map[string]string{"consumergroup": g, "topic": "lagged", "partition": fmt.Sprint(part)}
	}
	var mfs map[string]*dto.MetricFamily
	testkit.Eventually(t, 30*time.Second, "the live group's lag at 0 with its one member", func() bool {
		mfs = scrape(t, p.HTTPAddr)
		return sample(mfs, "kafka_consumergroup_lag_sum", map[string]string{"consumergroup": "live", "topic": "lagged"}) == 0 &&
			sample(mfs, "kafka_consumergroup_members", map[string]string{"consumergroup": "live"}) == 1
	})
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kafka_consumergroup_current_offset", gtp("idle", 0), 3},
		{"kafka_consumergroup_current_offset", gtp("idle", 1), 5},
		{"kafka_consumergroup_lag", gtp("idle", 0), 7},
		{"kafka_consumergroup_lag", gtp("idle", 1), 5},
		{"kafka_consumergroup_lag", gtp("idle", 2), 0},
		{"kafka_consumergroup_lag_sum", map[string]string{"consumergroup": "idle", "topic": "lagged"}, 12},
		{"kafka_consumergroup_current_offset_sum", map[string]string{"consumergroup": "idle", "topic": "lagged"}, 18},
		{"kafka_consumergroup_members", map[string]string{"consumergroup": "idle"}, 0},
		{"kafka_consumergroup_lag", gtp("live", 1), 0},
		{"kafka_topic_partition_current_offset", map[string]string{"topic": "lagged", "partition": "2"}, 10},
		{"kafka_topic_partition_oldest_offset", map[string]string{"topic": "lagged", "partition": "2"}, 0},
		{"cohort_metrics_partition_series_dropped", nil, 0},
	} {
		if got := sample(mfs, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	// The capped node: 2 series are a partition's two topic series;
	// every other per-partition series is left out, the sums stay.
	// (Groups are reported as the lag sampler last read them.)
	testkit.Eventually(t, 30*time.Second, "the capped node reports the idle group's lag sum of 12", func() bool {
		mfs = scrape(t, small.HTTPAddr)
		return sample(mfs, "kafka_consumergroup_lag_sum", map[string]string{"consumergroup": "idle", "topic": "lagged"}) == 12
	})
	if got := sample(mfs, "kafka_consumergroup_lag", nil); got != -1 {
		t.Errorf("capped: per-partition lag series present (%v)", got)
	}
	if got := sample(mfs, "cohort_metrics_partition_series_dropped", nil); got != 4+6 {
		t.Errorf("capped: %v series dropped, want 10 (2 topic partitions × 2, 3 group partitions × 2)", got)
	}
	// The group budget keeps the group with lag and leaves out the one
	// without, counted.
	testkit.Eventually(t, 30*time.Second, "the capped node's sample has both groups", func() bool {
		mfs = scrape(t, small.HTTPAddr)
		return sample(mfs, "cohort_metrics_group_series_dropped", nil) == 6
	})
	for _, f := range []string{"kafka_consumergroup_members", "cohort_consumergroup_generation"} {
		if got := sample(mfs, f, map[string]string{"consumergroup": "caught-up"}); got != -1 {
			t.Errorf("capped: the caught-up group's %s series present (%v)", f, got)
		}
	}
	if got := sample(mfs, "kafka_consumergroup_lag_sum", map[string]string{"consumergroup": "idle", "topic": "lagged"}); got != 12 {
		t.Errorf("capped: the idle group's lag sum %v, want 12", got)
	}
	// The lag histories: the node within its bound keeps 60 samples;
	// the one over its bound of a byte, a status's window of 10.
	mfs = scrape(t, p.HTTPAddr)
	if got := sample(mfs, "cohort_lag_history_samples", nil); got != 60 {
		t.Errorf("cohort_lag_history_samples %v, want 60", got)
	}
	if got := sample(mfs, "cohort_lag_history_bytes", nil); got <= 0 {
		t.Errorf("cohort_lag_history_bytes %v, want some", got)
	}
	testkit.Eventually(t, 30*time.Second, "the node over its history bound keeps a window of 10 samples", func() bool {
		return sample(scrape(t, small.HTTPAddr), "cohort_lag_history_samples", nil) == 10
	})
}
