package node

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/kafka"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/topics"
	"github.com/prometheus/client_golang/prometheus"
)

// apiSource is what the admin JSON API reads of the node.
type apiSource struct {
	n       *Node
	started time.Time
	// kafka is the node's Kafka server, set once it exists and before
	// the admin listener serves (the API is made before it); held here
	// because stop clears n.kafka while a request may still be served.
	kafka *kafka.Server
}

var _ admin.APISource = (*apiSource)(nil)

func (s *apiSource) Node() admin.NodeInfo {
	n := s.n
	info := admin.NodeInfo{
		Version:       n.cfg.Version,
		NodeID:        "0",
		Mode:          "single",
		StartedAt:     s.started.UTC(),
		UptimeSeconds: time.Since(s.started).Seconds(),
		KafkaAddr:     n.KafkaAddr(),
		ShardsTotal:   n.groups.Shards(),
		ShardsHeld:    n.groups.Held(),
		Store:         admin.StoreInfo{Kind: "pebble", Path: filepath.Join(n.cfg.DataDir, "store")},
	}
	if info.ShardsHeld == nil {
		info.ShardsHeld = []int{}
	}
	if c := n.cfg.Cluster; c != nil && n.member != nil {
		info.Mode, info.NodeID = "cluster", strconv.Itoa(int(n.member.NodeID()))
		info.Store = admin.StoreInfo{Kind: "etcd", Endpoints: c.EtcdEndpoints, Prefix: c.Prefix}
	}
	return info
}

func (s *apiSource) Inspect(ctx context.Context) ([]groups.Summary, error) {
	return s.n.groups.Inspect(ctx)
}

func (s *apiSource) InspectInPlace(ctx context.Context, mu sync.Locker) (groups.Reading, error) {
	return s.n.groups.InspectInPlace(ctx, mu)
}

func (s *apiSource) InspectGroup(ctx context.Context, tenant, group string) (groups.Summary, bool, error) {
	return s.n.groups.InspectGroup(ctx, tenant, group)
}

func (s *apiSource) Handle(ctx context.Context, tenant string, req kmsg.Request) kmsg.Response {
	return s.n.groups.Handle(ctx, coordinator.Request{Msg: req, Tenant: tenant, ClientID: "cohort-admin"})()
}

// Topics lists the topics with their partitions' offsets: those this node
// leads as they are, those other nodes lead as last read (remoteOffsets).
func (s *apiSource) Topics() []admin.TopicInfo {
	var remote map[admin.TopicPartition]admin.PartitionOffsets
	if s.n.remote != nil {
		remote = s.n.remote.get()
	}
	var out []admin.TopicInfo
	for _, t := range s.n.topics.Topics() {
		if t.Name == offsetstopic.Name && s.n.groups.OffsetsTopic() {
			continue // hidden by the coordinator's (see below)
		}
		ti := admin.TopicInfo{Name: t.Name, ID: t.ID, Partitions: make([]admin.PartitionInfo, len(t.Partitions)), Configs: admin.TopicConfigs(t)}
		for i, p := range t.Partitions {
			pi := admin.PartitionInfo{Partition: int32(i), Leader: t.Leaders[i], LogStartOffset: -1, LogEndOffset: -1}
			if p != nil {
				pi.LogStartOffset, pi.LogEndOffset = p.Offsets()
			} else if po, ok := remote[admin.TopicPartition{Topic: t.Name, Partition: int32(i)}]; ok {
				pi.LogStartOffset, pi.LogEndOffset = po.Start, po.End
			}
			ti.Partitions[i] = pi
		}
		out = append(out, ti)
	}
	if co := s.n.groups; co.OffsetsTopic() {
		// __consumer_offsets: a partition per coordinator shard, led by
		// the shard's coordinator; its offsets where this node serves it.
		ti := admin.TopicInfo{Name: offsetstopic.Name, Internal: true, Partitions: make([]admin.PartitionInfo, co.Shards()), Configs: offsetsConfigs}
		for i := range ti.Partitions {
			pi := admin.PartitionInfo{Partition: int32(i), Leader: -1, LogStartOffset: -1, LogEndOffset: -1}
			if s.n.member == nil {
				pi.Leader = s.n.topics.NodeID()
			} else if b, ok := (clusterView{s.n.member}).Coordinator(i); ok {
				pi.Leader = b.NodeID
			}
			if p := co.OffsetsPartition(i); p != nil {
				pi.LogStartOffset, pi.LogEndOffset = p.Offsets()
			}
			ti.Partitions[i] = pi
		}
		out = append(out, ti)
	}
	slices.SortFunc(out, func(a, b admin.TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// offsetsConfigs are the coordinator's __consumer_offsets' configs, as
// DescribeConfigs reports them (kafka/consumer_offsets.go): the
// defaults, but compacted, as Kafka creates it.
var offsetsConfigs = admin.TopicConfigs(&topics.Topic{Configs: map[string]string{"cleanup.policy": "compact"}})

// GroupConfigs are a group's configs as DescribeConfigs reports them.
func (s *apiSource) GroupConfigs(tenant, group string) []admin.GroupConfig {
	var out []admin.GroupConfig
	for _, c := range s.kafka.GroupConfigs(tenant, group) {
		out = append(out, admin.GroupConfig{Name: c.Name, Value: c.Value, Source: admin.ConfigSourceName(c.Source)})
	}
	return out
}

// registerConnMetrics exports the Kafka listener's connection counts.
func registerConnMetrics(reg prometheus.Registerer, srv *kafka.Server) {
	reg.MustRegister(quotaThrottles{srv})
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cohort_connections_open",
			Help: "Kafka client connections open.",
		}, func() float64 { return float64(srv.Conns().Open) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "cohort_connections_refused_total",
			Help:        "Kafka client connections closed on arrival by a limit (--max-connections, --max-connections-per-ip).",
			ConstLabels: prometheus.Labels{"limit": "max_connections"},
		}, func() float64 { return float64(srv.Conns().RefusedMax) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "cohort_connections_refused_total",
			Help:        "Kafka client connections closed on arrival by a limit (--max-connections, --max-connections-per-ip).",
			ConstLabels: prometheus.Labels{"limit": "max_connections_per_ip"},
		}, func() float64 { return float64(srv.Conns().RefusedPerIP) }),
	)
}

// quotaThrottles exports the throttle time the organisations' rate
// quotas asked for (kafka/quotas.go), one series per organisation and
// kind: bounded by the organisations, not by clients.
type quotaThrottles struct{ srv *kafka.Server }

var quotaThrottleDesc = prometheus.NewDesc("cohort_quota_throttle_seconds_total",
	"Throttle time the organisations' rate quotas asked for (ThrottleMillis sent, connection muted), by organisation and kind (produce, fetch, request); a request over two quotas counts in both.",
	[]string{"org", "kind"}, nil)

func (q quotaThrottles) Describe(ch chan<- *prometheus.Desc) { ch <- quotaThrottleDesc }

func (q quotaThrottles) Collect(ch chan<- prometheus.Metric) {
	for _, t := range q.srv.QuotaThrottles() {
		ch <- prometheus.MustNewConstMetric(quotaThrottleDesc, prometheus.CounterValue, t.Seconds, t.Org, t.Kind)
	}
}
