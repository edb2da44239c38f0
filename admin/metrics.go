// Package admin is Cohort's operator surface over HTTP: Prometheus
// metrics fed by the observer seam (observe.Observer), health and
// readiness endpoints. It reads what the node reports; it must not change
// the coordinator's state.
package admin

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/cohort-dev/cohort/observe"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics is the observer that keeps Cohort's own metrics (cohort_*). Its
// label values come from closed sets (API names, versions, error codes,
// group types, a reason's category, shard numbers), never from group or
// member names, so a scrape's size does not grow with the groups.
type Metrics struct {
	// answered caches the counter and histogram of each (API, version,
	// error code), so that a request costs a map lookup rather than
	// formatting and hashing three label values.
	answered sync.Map // requestKey → requestSeries

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	rebalances      *prometheus.CounterVec
	rebalanceTime   *prometheus.HistogramVec
	memberEvents    *prometheus.CounterVec
	batches         *prometheus.CounterVec
	batchRecords    prometheus.Histogram
	batchDuration   prometheus.Histogram
	shardEvents     *prometheus.CounterVec
	shardLoadTime   prometheus.Histogram
	shardsHeld      prometheus.Gauge
	// loaded is the set of shards served, so that the gauge counts each
	// once: a shard given up after a failed write and then unloaded
	// reports two unloads, and a load under way can be unloaded.
	loadedMu sync.Mutex
	loaded   map[uint16]bool
}

var _ observe.Observer = (*Metrics)(nil)

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := func(c prometheus.Collector) prometheus.Collector { reg.MustRegister(c); return c }
	return &Metrics{
		loaded: map[uint16]bool{},
		requests: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cohort_requests_total",
			Help: "Kafka requests answered, by API, version and the first error code in the response (0: none; -1: no response).",
		}, []string{"api", "version", "error_code"})).(*prometheus.CounterVec),
		requestDuration: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cohort_request_duration_seconds",
			Help:    "Time from a request's frame being read to its response being built, by API.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100µs .. 26s
		}, []string{"api"})).(*prometheus.HistogramVec),
		rebalances: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cohort_rebalances_total",
			Help: "Rebalances started, by group type (classic, consumer) and reason category.",
		}, []string{"type", "reason"})).(*prometheus.CounterVec),
		rebalanceTime: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cohort_rebalance_duration_seconds",
			Help:    "Time from a rebalance's start to its completion, by group type.",
			Buckets: prometheus.ExponentialBuckets(0.01, 3, 10), // 10ms .. 3h
		}, []string{"type"})).(*prometheus.HistogramVec),
		memberEvents: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cohort_group_member_events_total",
			Help: "Members joined, left, expired (session timeout) and fenced, by group type.",
		}, []string{"type", "event"})).(*prometheus.CounterVec),
		batches: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cohort_store_batches_total",
			Help: "Record batches written to the store, by outcome (ok, error).",
		}, []string{"outcome"})).(*prometheus.CounterVec),
		batchRecords: f(prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cohort_store_batch_records",
			Help:    "Records per batch written to the store (group commit).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8), // 1 .. 16384
		})).(prometheus.Histogram),
		batchDuration: f(prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cohort_store_batch_duration_seconds",
			Help:    "Time from a batch's write starting to it being durable.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 3, 10), // 100µs .. 2s
		})).(prometheus.Histogram),
		shardEvents: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cohort_shard_events_total",
			Help: "Shard loads (ok, failed) and unloads (asked for, lost).",
		}, []string{"event"})).(*prometheus.CounterVec),
		shardLoadTime: f(prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cohort_shard_load_duration_seconds",
			Help:    "Time to load a shard from the store.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8), // 1ms .. 16s
		})).(prometheus.Histogram),
		shardsHeld: f(prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cohort_shards_loaded",
			Help: "Coordinator shards this node serves, the group coordinator's and the warm-handoff assigner's (loaded and not unloaded since).",
		})).(prometheus.Gauge),
	}
}

// RequestReceived implements observe.Observer.
func (m *Metrics) RequestReceived(ctx context.Context, _ observe.Request) context.Context {
	return ctx
}

type requestKey struct{ key, version, code int16 }

type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// RequestAnswered counts the request and its latency.
func (m *Metrics) RequestAnswered(_ context.Context, r observe.Request, a observe.Answer) {
	code := int16(-1)
	if a.Resp != nil {
		code = a.ErrorCode()
	}
	k := requestKey{r.Key, r.Version, code}
	v, ok := m.answered.Load(k)
	if !ok {
		api := kmsg.NameForKey(r.Key)
		v, _ = m.answered.LoadOrStore(k, requestSeries{
			count:    m.requests.WithLabelValues(api, strconv.Itoa(int(r.Version)), strconv.Itoa(int(code))),
			duration: m.requestDuration.WithLabelValues(api),
		})
	}
	rs := v.(requestSeries)
	rs.count.Inc()
	rs.duration.Observe(a.Latency.Seconds())
}

// BatchWritten counts the batch.
func (m *Metrics) BatchWritten(b observe.Batch) {
	if b.Err != nil {
		m.batches.WithLabelValues("error").Inc()
		return
	}
	m.batches.WithLabelValues("ok").Inc()
	m.batchRecords.Observe(float64(b.Records))
	m.batchDuration.Observe(b.Latency.Seconds())
}

// Group counts rebalances and member events.
func (m *Metrics) Group(_ context.Context, e observe.GroupEvent) {
	switch e.Kind {
	case observe.RebalanceStarted:
		m.rebalances.WithLabelValues(e.Protocol, ReasonCategory(e.Reason)).Inc()
	case observe.RebalanceCompleted:
		m.rebalanceTime.WithLabelValues(e.Protocol).Observe(e.Duration.Seconds())
	case observe.MemberJoined:
		m.memberEvents.WithLabelValues(e.Protocol, "joined").Inc()
	case observe.MemberLeft:
		m.memberEvents.WithLabelValues(e.Protocol, "left").Inc()
	case observe.MemberExpired:
		m.memberEvents.WithLabelValues(e.Protocol, "expired").Inc()
	case observe.MemberFenced:
		m.memberEvents.WithLabelValues(e.Protocol, "fenced").Inc()
	}
}

// Shard counts loads and unloads and keeps the number of shards served.
func (m *Metrics) Shard(e observe.ShardEvent) {
	switch e.Kind {
	case observe.ShardLoaded:
		if e.Err != nil {
			m.shardEvents.WithLabelValues("load_failed").Inc()
			return
		}
		m.shardEvents.WithLabelValues("loaded").Inc()
		m.shardLoadTime.Observe(e.Took.Seconds())
		m.setLoaded(e.Shard, true)
	case observe.ShardUnloaded:
		if e.Reason == "unloaded" {
			m.shardEvents.WithLabelValues("unloaded").Inc()
		} else {
			m.shardEvents.WithLabelValues("lost").Inc()
		}
		m.setLoaded(e.Shard, false)
	}
}

func (m *Metrics) setLoaded(shard uint16, on bool) {
	m.loadedMu.Lock()
	defer m.loadedMu.Unlock()
	if on {
		m.loaded[shard] = true
	} else {
		delete(m.loaded, shard)
	}
	m.shardsHeld.Set(float64(len(m.loaded)))
}

// ReasonCategory maps a rebalance's reason, as the group machines word it
// (Kafka's wording for classic groups, coordinator/groups), to a small
// fixed set of label values: member-joined, member-left, member-expired,
// metadata-changed (a member rejoined with other metadata, or the
// subscribed topics changed), subscription-changed, timeout, other. The
// client's own words ("; client reason: ...") are not looked at.
func ReasonCategory(reason string) string {
	r, _, _ := strings.Cut(strings.ToLower(reason), "; client reason:")
	switch {
	case strings.Contains(r, "pending sync") || strings.Contains(r, "timeout"):
		return "timeout"
	case strings.Contains(r, "expiration") || strings.Contains(r, "expired"):
		return "member-expired"
	case strings.Contains(r, "leavegroup") || strings.HasSuffix(r, " left"):
		return "member-left"
	case strings.Contains(r, "subscription"):
		return "subscription-changed"
	case strings.Contains(r, "metadata"):
		return "metadata-changed"
	case strings.Contains(r, "adding new member") || strings.Contains(r, "re-joining") || strings.HasSuffix(r, " joined"):
		return "member-joined"
	}
	return "other"
}
