package e2e

// The admin HTTP listener of the real binary: health, readiness and
// Prometheus metrics that reflect what real clients did.

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
		{"cohort_rebalances_total", map[string]string{"type": "classic", "reason": "member-joined"}, 1},
		{"cohort_store_batches_total", map[string]string{"outcome": "ok"}, 1},
		{"cohort_store_batch_duration_seconds", nil, 1},
		{"cohort_shards_loaded", nil, 17},
		{"cohort_shard_load_duration_seconds", nil, 17},
		{"go_goroutines", nil, 1},
	} {
		if got := sample(mfs, c.name, c.labels); got < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.min)
		}
	}
	if got := sample(mfs, "cohort_shards_loaded", nil); got != 17 {
		t.Errorf("cohort_shards_loaded = %v, want the 16 group shards and the assigner's", got)
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
