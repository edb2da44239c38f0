package admin

import (
	"cmp"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/topics"
)

// GroupOffsets is one group as the lag metrics see it.
type GroupOffsets struct {
	// Org is the group's organisation (security.DefaultOrg for the
	// default tenant): two organisations may have a group of one name.
	Org     string
	Group   string
	Members int
	// Committed holds the group's committed offset of each partition.
	Committed map[TopicPartition]int64
	// Share holds a share group's share partitions (KIP-932) whose state
	// this node holds; nil for other groups.
	Share map[TopicPartition]SharePartition
	// Ends are the partitions' offsets (by the log's names) the group's
	// lag was read against, its sample's; nil: the collector's own
	// reading of Partitions and Remote.
	Ends map[TopicPartition]PartitionOffsets
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// PartitionOffsets are a partition's log start and end (high watermark).
type PartitionOffsets struct {
	Start, End int64
}

// LagSource is where the lag metrics come from: the groups this node
// coordinates, and the partitions it hosts.
type LagSource interface {
	// Groups returns every organisation's groups as last read, within a
	// budget of per-group series (GroupSeries counts a group's): every
	// group if their series fit in maxSeries, else the groups with the
	// most lag first, as many as fit; dropped counts the series of the
	// groups left out. Negative maxSeries: none. A scrape never reads
	// the coordinator itself (a shard stuck on its store would hold
	// /metrics for the store's timeout, and every scrape would copy
	// every offset): it reports the lag sampler's last reading
	// (API.Groups).
	Groups(maxSeries int) (groups []GroupOffsets, dropped int)
	Partitions() map[TopicPartition]PartitionOffsets
	// Remote returns the offsets of partitions other nodes lead, as last
	// read (cluster mode; nil on a single node): a group's lag counts
	// them, but only their leader exports their topic series.
	Remote() map[TopicPartition]PartitionOffsets
}

// LagConfig configures NewLag.
type LagConfig struct {
	Source LagSource
	// MaxPartitionSeries caps the per-partition series of one scrape
	// (kafka_consumergroup_current_offset and _lag count one each per
	// group and partition, cohort_sharegroup_start_offset and _lag one
	// each per share group and partition, kafka_topic_partition_* one
	// each per partition): beyond it per-partition series are left out,
	// and the per-topic sums (_lag_sum, _current_offset_sum, the share
	// groups' records in flight) still cover every partition. Default
	// 10,000; negative: no per-partition series.
	MaxPartitionSeries int
	// MaxGroupSeries caps the per-group series of one scrape
	// (kafka_consumergroup_members, and per topic of the group
	// kafka_consumergroup_lag_sum and _current_offset_sum, or a share
	// group's per-topic series: GroupSeries): beyond it the groups with
	// the most lag are kept, the rest left out. The API's per-group
	// series count too (APIConfig.MaxGroupSeries, which must be the
	// same). A million quiet groups are six million series, a scrape no
	// Prometheus takes in its timeout. Default DefaultMaxGroupSeries;
	// negative: no per-group series.
	MaxGroupSeries int
	Logger         *slog.Logger
}

// DefaultMaxGroupSeries is the default budget of per-group series of
// one scrape: about 40,000 groups of one topic, a scrape of about 25 MB.
const DefaultMaxGroupSeries = 250000

// GroupSeries is how many per-group series a scrape reports of a group
// with offsets committed on topics topics and share-partition state on
// shareTopics, at most: kafka_consumergroup_members,
// cohort_consumergroup_generation, _status and _time_to_clear_seconds,
// _lag_sum and _current_offset_sum per topic, and per share topic
// cohort_sharegroup_lag_sum, four of _records_in_flight and
// _records_redelivered.
func GroupSeries(topics, shareTopics int) int { return 4 + 2*topics + 6*shareTopics }

// Lag is a Prometheus collector of consumer-group lag under the names
// kafka_exporter gives them, so that its dashboards and alerts keep
// working: kafka_consumergroup_current_offset, kafka_consumergroup_lag
// (labels consumergroup, topic, partition), kafka_consumergroup_lag_sum,
// kafka_consumergroup_current_offset_sum (consumergroup, topic),
// kafka_consumergroup_members (consumergroup), each with an org label too
// (the group's organisation: two may share a group name, and /metrics
// shows an organisation's principals their own series only),
// kafka_topic_partition_current_offset and
// kafka_topic_partition_oldest_offset (topic, partition). Groups come
// from the lag sampler's last reading (API.Groups), partitions are read at
// scrape time. As kafka_exporter, a partition with no commit has no
// current-offset or lag series; lag is the high watermark less the
// committed offset, never below 0. A scrape is bounded: at most
// MaxPartitionSeries per-partition series and MaxGroupSeries per-group
// ones (the groups with the most lag first), with
// cohort_metrics_partition_series_dropped and
// cohort_metrics_group_series_dropped saying how many were left out.
//
// Share groups (KIP-932), which commit no offsets, have series of their
// own, from the share-partition state the lag sampler last read (the
// share-state shards this node holds) and each partition's high watermark
// at scrape time, with the labels org, sharegroup and topic:
//
//	cohort_sharegroup_start_offset (and partition)  the share-partition start offset (SPSO)
//	cohort_sharegroup_lag (and partition)           KIP-1226's lag (SharePartition.Lag)
//	cohort_sharegroup_lag_sum                       the lag of all the topic's partitions
//	cohort_sharegroup_records_in_flight (and state) records from the SPSO to the end
//	                                                offset (SPEO) by state: available, acquired,
//	                                                acknowledged, archived; their sum is the
//	                                                records in flight
//	cohort_sharegroup_records_redelivered           records in flight delivered more than
//	                                                once (delivery count above 1)
//
// All are gauges of the state at the last sample: the records in flight
// come and go as they are delivered and finished.
type Lag struct {
	cfg                    LagConfig
	dropped, droppedGroups atomic.Int64

	currentOffset, lag, lagSum, offsetSum, members *prometheus.Desc
	topicCurrent, topicOldest, droppedDesc         *prometheus.Desc
	droppedGroupDesc                               *prometheus.Desc
	shareStart, shareLag, shareLagSum              *prometheus.Desc
	shareInFlight, shareRedelivered                *prometheus.Desc
}

var _ prometheus.Collector = (*Lag)(nil)

// NewLag returns the collector; register it on a registry.
func NewLag(cfg LagConfig) *Lag {
	if cfg.MaxGroupSeries == 0 {
		cfg.MaxGroupSeries = DefaultMaxGroupSeries
	}
	if cfg.MaxPartitionSeries == 0 {
		cfg.MaxPartitionSeries = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	gtp := []string{"org", "consumergroup", "topic", "partition"}
	return &Lag{
		cfg:              cfg,
		currentOffset:    prometheus.NewDesc("kafka_consumergroup_current_offset", "Current offset of a consumer group at a topic partition.", gtp, nil),
		lag:              prometheus.NewDesc("kafka_consumergroup_lag", "Current approximate lag of a consumer group at a topic partition.", gtp, nil),
		lagSum:           prometheus.NewDesc("kafka_consumergroup_lag_sum", "Current approximate lag of a consumer group at a topic, all partitions.", []string{"org", "consumergroup", "topic"}, nil),
		offsetSum:        prometheus.NewDesc("kafka_consumergroup_current_offset_sum", "Current offset of a consumer group at a topic, all partitions.", []string{"org", "consumergroup", "topic"}, nil),
		members:          prometheus.NewDesc("kafka_consumergroup_members", "Amount of members in a consumer group.", []string{"org", "consumergroup"}, nil),
		topicCurrent:     prometheus.NewDesc("kafka_topic_partition_current_offset", "Current offset (high watermark) of a topic partition; topic is the name its organisation's clients know.", []string{"topic", "partition", "org"}, nil),
		topicOldest:      prometheus.NewDesc("kafka_topic_partition_oldest_offset", "Oldest offset (log start) of a topic partition; topic is the name its organisation's clients know.", []string{"topic", "partition", "org"}, nil),
		droppedDesc:      prometheus.NewDesc("cohort_metrics_partition_series_dropped", "Per-partition lag series left out of the last scrape by --metrics-max-partition-series.", nil, nil),
		droppedGroupDesc: prometheus.NewDesc("cohort_metrics_group_series_dropped", "Per-group lag series (of the groups with the least lag) left out of the last scrape by --metrics-max-group-series.", nil, nil),
		shareStart:       prometheus.NewDesc("cohort_sharegroup_start_offset", "A share group's share-partition start offset (KIP-932): every record before it is done (at the last lag sample).", []string{"org", "sharegroup", "topic", "partition"}, nil),
		shareLag:         prometheus.NewDesc("cohort_sharegroup_lag", "A share group's lag at a partition (KIP-1226): the high watermark less the start offset less the records acknowledged or archived after it.", []string{"org", "sharegroup", "topic", "partition"}, nil),
		shareLagSum:      prometheus.NewDesc("cohort_sharegroup_lag_sum", "A share group's lag at a topic, all partitions (KIP-1226).", []string{"org", "sharegroup", "topic"}, nil),
		shareInFlight:    prometheus.NewDesc("cohort_sharegroup_records_in_flight", "A share group's records in flight at a topic (from each partition's start offset to its end offset), by state: available, acquired, acknowledged, archived (at the last lag sample).", []string{"org", "sharegroup", "topic", "state"}, nil),
		shareRedelivered: prometheus.NewDesc("cohort_sharegroup_records_redelivered", "A share group's records in flight at a topic delivered more than once (delivery count above 1), whatever their state (at the last lag sample).", []string{"org", "sharegroup", "topic"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (l *Lag) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{l.currentOffset, l.lag, l.lagSum, l.offsetSum, l.members, l.topicCurrent, l.topicOldest, l.droppedDesc, l.droppedGroupDesc,
		l.shareStart, l.shareLag, l.shareLagSum, l.shareInFlight, l.shareRedelivered} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (l *Lag) Collect(ch chan<- prometheus.Metric) {
	groups, droppedGroups := l.cfg.Source.Groups(l.cfg.MaxGroupSeries)
	parts := l.cfg.Source.Partitions()
	budget := l.cfg.MaxPartitionSeries
	dropped := 0
	series := func(n int) bool {
		if budget < n {
			dropped += n
			return false
		}
		budget -= n
		return true
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	fits := func(n int) bool { return budget >= 2*n }
	for tp, o := range byPartition(parts, fits(len(parts))) {
		if series(2) {
			p := strconv.Itoa(int(tp.Partition))
			tenant, name := topics.Owner(tp.Topic)
			gauge(l.topicCurrent, o.End, name, p, security.OrgName(tenant))
			gauge(l.topicOldest, o.Start, name, p, security.OrgName(tenant))
		}
	}
	remote := l.cfg.Source.Remote()
	for _, g := range groups {
		if g.Org == "" {
			g.Org = security.DefaultOrg
		}
		gauge(l.members, int64(g.Members), g.Org, g.Group)
		type sums struct{ lag, offset int64 }
		byTopic := map[string]*sums{}
		for tp, off := range byPartition(g.Committed, fits(len(g.Committed))) {
			s := byTopic[tp.Topic]
			if s == nil {
				s = &sums{}
				byTopic[tp.Topic] = s
			}
			s.offset += off
			lag := int64(-1)
			// The log's name of the group's topic (topics.Internal).
			logTP := TopicPartition{Topic: topics.Internal(security.TenantOfOrg(g.Org), tp.Topic), Partition: tp.Partition}
			po, ok := g.end(logTP, parts, remote)
			if ok {
				lag = max(0, po.End-off)
				s.lag += lag
			}
			if series(2) {
				p := strconv.Itoa(int(tp.Partition))
				gauge(l.currentOffset, off, g.Org, g.Group, tp.Topic, p)
				if lag >= 0 {
					gauge(l.lag, lag, g.Org, g.Group, tp.Topic, p)
				}
			}
		}
		for topic, s := range byTopic {
			gauge(l.lagSum, s.lag, g.Org, g.Group, topic)
			gauge(l.offsetSum, s.offset, g.Org, g.Group, topic)
		}
		l.collectShare(g, parts, remote, fits(len(g.Share)), series, gauge)
	}
	gauge(l.droppedDesc, int64(dropped))
	if dropped > 0 && l.dropped.Swap(int64(dropped)) == 0 {
		l.cfg.Logger.Warn("lag metrics: per-partition series left out (--metrics-max-partition-series)", "dropped", dropped, "max", l.cfg.MaxPartitionSeries)
	}
	gauge(l.droppedGroupDesc, int64(droppedGroups))
	if droppedGroups > 0 && l.droppedGroups.Swap(int64(droppedGroups)) == 0 {
		l.cfg.Logger.Warn("lag metrics: per-group series of the groups with the least lag left out (--metrics-max-group-series)", "dropped", droppedGroups, "max", l.cfg.MaxGroupSeries)
	}
}

// collectShare reports share group g's series (Lag's doc), its
// per-partition ones within the scrape's budget (series; fit: all of
// them fit in it).
func (l *Lag) collectShare(g GroupOffsets, parts, remote map[TopicPartition]PartitionOffsets, fit bool, series func(int) bool, gauge func(*prometheus.Desc, int64, ...string)) {
	type sums struct {
		lag, lagKnown int64
		counts        ShareCounts
	}
	byTopic := map[string]*sums{}
	for tp, sp := range byPartition(g.Share, fit) {
		s := byTopic[tp.Topic]
		if s == nil {
			s = &sums{}
			byTopic[tp.Topic] = s
		}
		s.counts.add(sp.ShareCounts)
		lag := int64(-1)
		logTP := TopicPartition{Topic: topics.Internal(security.TenantOfOrg(g.Org), tp.Topic), Partition: tp.Partition}
		po, ok := g.end(logTP, parts, remote)
		if ok {
			lag = sp.Lag(po.End)
			s.lag += lag
			s.lagKnown++
		}
		if series(2) {
			p := strconv.Itoa(int(tp.Partition))
			gauge(l.shareStart, sp.StartOffset, g.Org, g.Group, tp.Topic, p)
			if lag >= 0 {
				gauge(l.shareLag, lag, g.Org, g.Group, tp.Topic, p)
			}
		}
	}
	for topic, s := range byTopic {
		if s.lagKnown > 0 {
			gauge(l.shareLagSum, s.lag, g.Org, g.Group, topic)
		}
		for _, st := range []struct {
			state string
			n     int64
		}{{"available", s.counts.Available}, {"acquired", s.counts.Acquired}, {"acknowledged", s.counts.Acknowledged}, {"archived", s.counts.Archived}} {
			gauge(l.shareInFlight, st.n, g.Org, g.Group, topic, st.state)
		}
		gauge(l.shareRedelivered, s.counts.Redelivered, g.Org, g.Group, topic)
	}
}

// end is the offsets of partition tp (the log's name) g's lag is read
// against: its sample's, else those read now (parts, then remote).
func (g GroupOffsets) end(tp TopicPartition, parts, remote map[TopicPartition]PartitionOffsets) (PartitionOffsets, bool) {
	if g.Ends != nil {
		po, ok := g.Ends[tp]
		return po, ok
	}
	if po, ok := parts[tp]; ok {
		return po, true
	}
	po, ok := remote[tp]
	return po, ok
}

// byPartition yields m's entries: in (topic, partition) order when they
// do not all fit in the scrape's budget of per-partition series (fit),
// so that every scrape gives series to the same partitions, where the
// map's order gave them to others each time and their series came and
// went; in the map's order when they all fit, which costs no sort.
func byPartition[V any](m map[TopicPartition]V, fit bool) iter.Seq2[TopicPartition, V] {
	if fit {
		return maps.All(m)
	}
	keys := slices.SortedFunc(maps.Keys(m), compareTPs)
	return func(yield func(TopicPartition, V) bool) {
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// compareTPs orders partitions by topic, then partition.
func compareTPs(a, b TopicPartition) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}
