// Package admin is Cohort's operator surface over HTTP: Prometheus
// metrics fed by the observer seam (observe.Observer), health and
// readiness endpoints. It reads what the node reports; it must not change
// the coordinator's state.
package admin

import (
	"context"
	"strconv"
	"sync"

	"github.com/cohort-dev/cohort/observe"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics is the observer that keeps Cohort's own metrics (cohort_*). Its
// label values come from closed sets (API names, versions, error codes,
// group types, a rebalance's cause, shard numbers), never from group or
// member names or free text, so a scrape's size does not grow with the
// groups.
type Metrics struct {
	// answered caches the counter and histogram of each (API, version,
	// error code), so that a request costs a map lookup rather than
	// formatting and hashing three label values.
	answered sync.Map // requestKey → requestSeries

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	rebalances      *prometheus.CounterVec
	rebalanceTime   *prometheus.HistogramVec
	joinBarrier     prometheus.Histogram
	moved           *prometheus.HistogramVec
	memberEvents    *prometheus.CounterVec
	conversions     *prometheus.CounterVec
	batches         *prometheus.CounterVec
	batchRecords    prometheus.Histogram
	batchDuration   prometheus.Histogram
	shardEvents     *prometheus.CounterVec
	shardLoadTime   prometheus.Histogram
	shardsHeld      prometheus.Gauge
	clusterNodes    *prometheus.GaugeVec
	clusterEvents   *prometheus.CounterVec
	// loaded is the set of shards served, so that the gauge counts each
	// once: a shard given up after a failed write and then unloaded
	// reports two unloads, and a load under way can be unloaded.
	loadedMu sync.Mutex
	loaded   map[uint16]bool
}

var (
	_ observe.Observer        = (*Metrics)(nil)
	_ observe.ClusterObserver = (*Metrics)(nil)
)

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
			Help: "Rebalances started (a rebalance that starts over counts again), by group type (classic, consumer, share) and cause (member-joined, member-left, member-expired, member-rejoined, subscription-changed, metadata-changed, static-member-replaced, admin-action, rebalance-timeout, other).",
		}, []string{"type", "cause"})).(*prometheus.CounterVec),
		rebalanceTime: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cohort_rebalance_duration_seconds",
			Help:    "Time from a rebalance's start to its completion, by group type.",
			Buckets: prometheus.ExponentialBuckets(0.01, 3, 10), // 10ms .. 3h
		}, []string{"type"})).(*prometheus.HistogramVec),
		joinBarrier: f(prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cohort_join_barrier_wait_seconds",
			Help:    "A classic group's join barrier per completed rebalance: its time in PreparingRebalance, waiting for every member to rejoin.",
			Buckets: prometheus.ExponentialBuckets(0.01, 3, 10), // 10ms .. 3h
		})).(prometheus.Histogram),
		moved: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cohort_rebalance_partitions_moved",
			Help:    "Partitions that changed owner per completed rebalance, by group type (where known: not for classic groups of another protocol type than consumer; for share groups, the partition-member pairs the new target adds).",
			Buckets: []float64{0, 1, 4, 16, 64, 256, 1024, 4096},
		}, []string{"type"})).(*prometheus.HistogramVec),
		memberEvents: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cohort_group_member_events_total",
			Help: "Members joined, left, expired (session timeout) and fenced, by group type.",
		}, []string{"type", "event"})).(*prometheus.CounterVec),
		conversions: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cohort_group_conversions_total",
			Help: "Groups with members converted online between the classic and the consumer protocol (a rolling upgrade to KIP-848 or back), by the type converted to.",
		}, []string{"type"})).(*prometheus.CounterVec),
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
			Help: "Coordinator shards this node serves, the group coordinator's, the transaction coordinator's and the warm-handoff assigner's (loaded and not unloaded since).",
		})).(prometheus.Gauge),
		clusterNodes: f(prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cohort_cluster_nodes",
			Help: "Cluster mode: the cluster's nodes as this node sees them, by state: serving (registered, not draining), draining (registered, leaving), suspended (this node, while it cannot renew its lease).",
		}, []string{"state"})).(*prometheus.GaugeVec),
		clusterEvents: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cohort_cluster_node_events_total",
			Help: "Cluster mode: changes in the cluster's nodes this node saw, by event: joined, lost (lease expired, or left), rejoined, draining; suspended and resumed (this node's lease).",
		}, []string{"event"})).(*prometheus.CounterVec),
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
		m.rebalances.WithLabelValues(e.Protocol, e.Cause.String()).Inc()
	case observe.RebalanceCompleted:
		m.rebalanceTime.WithLabelValues(e.Protocol).Observe(e.Duration.Seconds())
		if e.Cause == observe.CauseUnknown {
			break // begun before its shard loaded: no phases, nothing moved known
		}
		if e.Protocol == "classic" {
			m.joinBarrier.Observe(e.Phases.Join.Seconds())
		}
		if e.PartitionsMoved >= 0 {
			m.moved.WithLabelValues(e.Protocol).Observe(float64(e.PartitionsMoved))
		}
	case observe.MemberJoined:
		m.memberEvents.WithLabelValues(e.Protocol, "joined").Inc()
	case observe.MemberLeft:
		m.memberEvents.WithLabelValues(e.Protocol, "left").Inc()
	case observe.MemberExpired:
		m.memberEvents.WithLabelValues(e.Protocol, "expired").Inc()
	case observe.MemberFenced:
		m.memberEvents.WithLabelValues(e.Protocol, "fenced").Inc()
	case observe.GroupConverted:
		m.conversions.WithLabelValues(e.Protocol).Inc()
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

// Cluster counts the cluster event and sets the nodes in each state.
func (m *Metrics) Cluster(e observe.ClusterEvent) {
	if e.Kind.String() == "unknown" {
		return // not of the closed set
	}
	m.clusterEvents.WithLabelValues(e.Kind.String()).Inc()
	m.clusterNodes.WithLabelValues("serving").Set(float64(e.Serving))
	m.clusterNodes.WithLabelValues("draining").Set(float64(e.Draining))
	m.clusterNodes.WithLabelValues("suspended").Set(float64(e.Suspended))
}
