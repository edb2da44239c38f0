package admin

// The admin JSON API (/api/v1/...): groups with their members,
// assignments, offsets, lag, lag status, rebalance timeline and configs;
// topics with their partitions' offsets and configs; the node; the
// cluster's node events (cluster mode).
// openapi.json describes it and is served at /api/v1/openapi.json.
//
// It reads the coordinator through the same group APIs a client uses
// (DescribeGroups, ConsumerGroupDescribe, ShareGroupDescribe), through
// Inspect for what no Kafka response carries (the cgp_ id, commit times,
// every tenant's groups), and share groups' share-partition state through
// APIConfig.ShareState (share.go). Every group read is scoped to the
// caller's organisation (caller.go): operators see all of them. In cluster mode a node's API shows the groups it coordinates,
// with their lag on every partition (APISource.Topics gives the offsets
// of partitions other nodes lead as last read), as its /metrics does.

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/topics"
)

// APISource is what the API reads: the node it runs on.
type APISource interface {
	// Node describes the node.
	Node() NodeInfo
	// Inspect summarises every group this node coordinates, all tenants
	// (coordinator.Coordinator.Inspect).
	Inspect(ctx context.Context) ([]groups.Summary, error)
	// InspectGroup summarises one group, reading its shard alone; ok is
	// false when this node does not coordinate it.
	InspectGroup(ctx context.Context, tenant, group string) (sum groups.Summary, ok bool, err error)
	// Handle serves a group API request for tenant.
	Handle(ctx context.Context, tenant string, req kmsg.Request) kmsg.Response
	// Topics lists the topics, sorted by name.
	Topics() []TopicInfo
	// GroupConfigs are the configs of group of tenant as they resolve
	// (kafka.Server.GroupConfigs), sorted by name.
	GroupConfigs(tenant, group string) []GroupConfig
}

// InPlaceSource is an APISource whose readings of the groups can be
// taken in place (coordinator.Coordinator.InspectInPlace): the sampler
// then reads the groups that changed, not every group (Sample).
type InPlaceSource interface {
	APISource
	// InspectInPlace is Inspect updating the last reading's slice in
	// place, holding mu, when no group came or went.
	InspectInPlace(ctx context.Context, mu sync.Locker) (groups.Reading, error)
}

// NodeInfo is GET /api/v1/node.
type NodeInfo struct {
	Version       string    `json:"version"`
	NodeID        string    `json:"node_id"`
	Mode          string    `json:"mode"` // "single" or "cluster"
	StartedAt     time.Time `json:"started_at"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	KafkaAddr     string    `json:"kafka_addr"`
	ShardsTotal   int       `json:"shards_total"`
	ShardsHeld    []int     `json:"shards_held"`
	Store         StoreInfo `json:"store"`
	// Org is the caller's organisation, for a caller who is not an
	// operator (whose view is that organisation's); absent for operators.
	Org string `json:"org,omitempty"`
}

// StoreInfo says where the coordinator's state lives.
type StoreInfo struct {
	Kind      string   `json:"kind"` // "pebble" or "etcd"
	Path      string   `json:"path,omitempty"`
	Endpoints []string `json:"endpoints,omitempty"`
	Prefix    string   `json:"prefix,omitempty"`
}

// TopicInfo is a topic of GET /api/v1/topics.
type TopicInfo struct {
	Name string `json:"name"`
	// ID is the topic's id, which names a share partition's topic
	// (sharestate.Key); not in the JSON.
	ID         [16]byte        `json:"-"`
	Internal   bool            `json:"internal"`
	Partitions []PartitionInfo `json:"partitions"`
	// Configs are every topic config, as TopicConfigs resolves them.
	Configs []TopicConfig `json:"configs"`
}

// PartitionInfo is a partition's leader and, when this node leads it,
// its offsets (else both -1).
type PartitionInfo struct {
	Partition      int32 `json:"partition"`
	Leader         int32 `json:"leader"`
	LogStartOffset int64 `json:"log_start_offset"`
	LogEndOffset   int64 `json:"log_end_offset"`
	// LeaderAlive says whether the leader is a node that serves (cluster
	// mode; absent on a single node).
	LeaderAlive *bool `json:"leader_alive,omitempty"`
}

// APIConfig configures NewAPI.
type APIConfig struct {
	Source APISource
	// SampleInterval is how often the lag tracker reads every group's
	// offsets. Default 5 s.
	SampleInterval time.Duration
	// Tracker sizes the lag tracker's window and history.
	Tracker LagTrackerConfig
	// Timeline returns a group's last rebalances, newest first, as a
	// JSON-encodable value (observe/timeline); nil: none are kept.
	Timeline func(tenant, group string) any
	// ClusterEvents returns the cluster's node events this node saw,
	// newest first, as a JSON-encodable list (observe/timeline); nil: not
	// in cluster mode.
	ClusterEvents func() any
	// ShareState describes a share group's share-partition state held by
	// this node's share coordinator (KIP-932): every partition of the
	// group on the share-state shards held here, as
	// sharecoord.Host.Describe with no partitions named. Nil: no share
	// coordinator, and share groups show no offsets.
	ShareState func(ctx context.Context, tenant, group string) []sharestate.Description
	// Orgs is the organisation registry /api/v1/orgs manages; nil: those
	// routes answer 404.
	Orgs *security.Orgs
	// RefreshEnds, if set, reads the end offsets of the partitions other
	// nodes lead again (cluster mode), so that each sample is read
	// against the leaders' log ends of that moment (Source.Topics then
	// gives them). It is given the sample's context.
	RefreshEnds func(ctx context.Context)
	// Cluster is the node's cluster (cluster.go); nil on a single node.
	Cluster ClusterSource
	// PeerClient asks other nodes' admin APIs (cluster mode); nil:
	// http.DefaultClient.
	PeerClient *http.Client
	// PeerTimeout bounds each peer's answer. Default 3 s.
	PeerTimeout time.Duration
	// MaxGroupSeries caps the per-group series of a scrape, this API's
	// (cohort_consumergroup_generation, _status, _time_to_clear_seconds)
	// and the lag collector's together: the node gives both the same
	// (LagConfig.MaxGroupSeries, whose doc says more). Default
	// DefaultMaxGroupSeries; negative: none.
	MaxGroupSeries int
	Logger         *slog.Logger
}

// API serves the admin JSON API and samples lag in the background (Run).
type API struct {
	cfg APIConfig

	// mu guards what follows; the source's readings are written in place
	// holding it (InPlaceSource).
	mu      sync.RWMutex
	tracker *LagTracker
	last    []groups.Summary // the last sample's groups
	lastAt  time.Time        // when it was read
	// ends are the partitions' offsets the last sample's lag was read
	// against, by the log's names (topics.Internal): every view of lag
	// (the list, a group's detail, /metrics) uses these, so that all
	// show the one reading.
	ends map[TopicPartition]PartitionOffsets
	// index is the last sample's groups as the list filters, sorts and
	// pages them (list.go).
	index listIndex
	// sampleTook is how long the last sample's reading of the groups
	// took (from Inspect's answer to the index).
	sampleTook time.Duration
	// shares are the last sample's share groups' partitions, and
	// progress when each one's position last moved (share.go).
	shares   map[groupRef]map[TopicPartition]SharePartition
	progress map[shareRef]shareProgress
	// kept are the groups a scrape reports, chosen once a sample
	// (metricGroups).
	kept keptGroups
	// lastSorted says that last is sorted by tenant, then group, with
	// no group twice: the next sample can walk it for the groups that
	// did not change (Sample).
	lastSorted bool
	// slowOnly turns that off: every group is read in full (tests).
	slowOnly bool
	// clock, if set, is the samples' time (tests); else time.Now.
	clock func() time.Time
	// quietCount is how many groups the last sample took as quiet,
	// partialRead how many groups it read (samplePartial: the groups
	// that changed or are settling; else all), lastPartial whether it
	// read in part.
	quietCount, partialRead int
	lastPartial             bool
	// settling are the places of the groups whose history is not
	// settled (LagTracker.repeat), sharePos those of the share groups,
	// ascending: a partial sample reads them all.
	settling, sharePos []int32
	// byTopic is, by topic (the log's name), the places of the groups
	// with an offset on it (topicIndex); nil until a partial sample needs
	// it. byTopicAdded counts the places added to it since it was built.
	byTopic      map[string][]int32
	byTopicAdded int

	statusDesc, clearDesc, sampleDesc             *prometheus.Desc
	historyBytesDesc, historyReadingsDesc         *prometheus.Desc
	groupsDesc, offsetsDesc, pendingDesc, genDesc *prometheus.Desc
}

// NewAPI returns the API; call Run to sample lag.
func NewAPI(cfg APIConfig) *API {
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PeerClient == nil {
		cfg.PeerClient = http.DefaultClient
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = peerTimeout
	}
	if cfg.MaxGroupSeries == 0 {
		cfg.MaxGroupSeries = DefaultMaxGroupSeries
	}
	return &API{
		cfg:                 cfg,
		tracker:             NewLagTracker(cfg.Tracker),
		progress:            map[shareRef]shareProgress{},
		statusDesc:          prometheus.NewDesc("cohort_consumergroup_status", "A consumer group's Burrow-like lag status: 1 for its current status (OK, WARN, STALL, STOP, ERR; UNKNOWN until a full window of samples), by organisation.", []string{"org", "consumergroup", "status"}, nil),
		sampleDesc:          prometheus.NewDesc("cohort_lag_sample_seconds", "How long the last lag sample took to read every group it had read into the lag tracker and the groups list (from the coordinator's answer; every --lag-sample-interval).", nil, nil),
		historyBytesDesc:    prometheus.NewDesc("cohort_lag_history_bytes", "The lag histories' bytes, which --lag-history-max-bytes bounds.", nil, nil),
		historyReadingsDesc: prometheus.NewDesc("cohort_lag_history_samples", "How many lag samples of history the tracker keeps now: 60, fewer (down to the 10 of a status's window) while the histories are over --lag-history-max-bytes.", nil, nil),
		clearDesc:           prometheus.NewDesc("cohort_consumergroup_time_to_clear_seconds", "Estimated time for a consumer group to consume its lag at the rates of the last window; absent when its lag is not shrinking.", []string{"org", "consumergroup"}, nil),
		groupsDesc:          prometheus.NewDesc("cohort_groups", "Groups this node coordinates, by organisation, type and state (at the last lag sample).", []string{"org", "type", "state"}, nil),
		offsetsDesc:         prometheus.NewDesc("cohort_offsets", "Committed offsets this node holds, by organisation (at the last lag sample).", []string{"org"}, nil),
		pendingDesc:         prometheus.NewDesc("cohort_pending_members", "Member ids handed out with MEMBER_ID_REQUIRED and not yet used to join (KIP-394), by organisation (at the last lag sample).", []string{"org"}, nil),
		genDesc:             prometheus.NewDesc("cohort_consumergroup_generation", "A group's generation (classic) or group epoch (consumer, share) (at the last lag sample).", []string{"org", "consumergroup", "type"}, nil),
	}
}

// readingTimeout bounds a lag sample's reading of the groups (Sample).
const readingTimeout = time.Minute

// Run samples every group's lag each SampleInterval until ctx ends.
func (a *API) Run(ctx context.Context) {
	t := time.NewTicker(a.cfg.SampleInterval)
	defer t.Stop()
	for {
		a.Sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sample reads every group's offsets, and every share group's
// share-partition state, once into the lag tracker.
//
// A sample costs what changed, not what exists (issue 34). From a source
// that updates its reading in place (InPlaceSource), a reading in which
// no group came or went is read in part (samplePartial): the groups
// that changed, those whose partitions' end offsets moved, share groups,
// and those whose history is still settling; every other group's sample
// is its last one, and nothing of it is touched. A reading in which
// groups came or went is read in full, but a group the coordinator
// answers with its summary of the last reading (quiet: the same slices
// of offsets and assigned partitions), whose partitions' end offsets
// did not move, and that is not a share group, has the sample it had:
// the tracker repeats its last one (LagTracker.repeat) and its list
// entry is the last one's, its status evaluated again unless the
// tracker says it cannot have changed. What is shown is what reading
// every group in full shows (TestSampleQuietSame).
func (a *API) Sample(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, max(a.cfg.SampleInterval, time.Second))
	defer cancel()
	if a.cfg.RefreshEnds != nil {
		a.cfg.RefreshEnds(ctx)
	}
	// The reading of the groups has a bound of its own, longer than an
	// interval: a reading cut short is thrown away, and the shards then
	// answer the next one in full, so a reading of a million groups cut
	// at the interval would be cut every time. Readings never overlap
	// (Run waits for each), so a long one only delays the next.
	ctx, cancel = context.WithTimeout(parent, max(a.cfg.SampleInterval, readingTimeout))
	defer cancel()
	var r groups.Reading
	var err error
	if src, ok := a.cfg.Source.(InPlaceSource); ok {
		r, err = src.InspectInPlace(ctx, &a.mu)
	} else {
		r.Groups, err = a.cfg.Source.Inspect(ctx)
	}
	if err != nil {
		if parent.Err() == nil {
			a.cfg.Logger.Warn("lag sampling: reading the groups", "err", err)
		}
		return
	}
	sums := r.Groups
	ts := a.cfg.Source.Topics()
	ends, names := endOffsets(ts), topicNames(ts)
	// Only Sample writes what it reads here (the source writes the
	// reading in place from Sample's own call): no lock needed to read.
	if r.InPlace && a.lastSorted && a.ends != nil && !a.slowOnly && sameSlice(a.last, sums) && len(a.index.entries) == len(sums) {
		a.samplePartial(ctx, r, ends, names)
		return
	}
	shares := a.readShares(ctx, sums, nil, names)
	start, now := a.sampleTime()
	seen := map[shareRef]bool{}
	// One group's reading at a time, into one map: the tracker keeps
	// what it needs of it, and a reading of every group at once would
	// be a map per group, garbage as large as the tracker itself. The
	// lock is taken a chunk of groups at a time, so that requests (the
	// list, a group's detail, a scrape) wait for a chunk, not for a
	// reading of a million groups; meanwhile they see the last reading,
	// some groups' lag one sample newer.
	parts := map[PartitionRef]LagSample{}
	entries := make([]listEntry, len(sums))
	var settling, sharePos []int32
	a.mu.Lock()
	// The last reading, for the groups that did not change since
	// (quiet): usable when it was sorted, as the coordinator reads
	// them, with no group twice, so that a walk along it finds each
	// group's last summary, whose list entry is at the same position
	// (newListIndex did not sort them), and the tracker's last sample
	// of the group is that summary's; and when this reading is a new
	// slice (one written in place holds no last summaries).
	prev, prevEntries := a.last, a.index.entries
	var moved map[TopicPartition]bool
	fast := a.lastSorted && a.ends != nil && !a.slowOnly && !r.InPlace
	if fast {
		moved = movedEnds(a.ends, ends)
	}
	sorted := true
	j, nQuiet := 0, 0
	a.tracker.begin(now)
	for i := range sums {
		if i > 0 && i%sampleChunk == 0 {
			a.mu.Unlock()
			a.mu.Lock()
		}
		s := &sums[i]
		if s.Type == groups.ShareGroup {
			sharePos = append(sharePos, int32(i))
		}
		if i > 0 && compareGroups(&sums[i-1], s) >= 0 {
			sorted = false
		}
		if fast {
			for j < len(prev) && compareGroups(&prev[j], s) < 0 {
				j++
			}
			if j < len(prev) && quiet(s, &prev[j], moved) {
				// Its sample is its last one: the tracker repeats it,
				// and its entry's lag is as it was, as is its status
				// when the tracker says it cannot have changed.
				e := prevEntries[j]
				if hist, stable, settled, ok := a.tracker.repeat(s.Tenant, s.Group, now); ok {
					e.i = int32(i)
					if !stable {
						e.code = codeOf(a.statusOf(hist, e.lag, now))
					}
					entries[i] = e
					if !settled {
						settling = append(settling, int32(i))
					}
					nQuiet++
					continue
				}
			}
		}
		hist := a.observeGroup(i, s, shares[groupRef{s.Tenant, s.Group}], ends, now, parts, seen)
		entries[i] = a.listEntryOf(i, *s, shares[groupRef{s.Tenant, s.Group}], ends, hist, now)
		if !a.tracker.settledOf(hist) {
			settling = append(settling, int32(i))
		}
	}
	a.keepProgress(seen)
	a.tracker.end()
	a.last, a.lastAt, a.shares, a.ends, a.lastSorted = sums, now, shares, ends, sorted
	a.index = newListIndex(entries, sums, sorted)
	a.settling, a.sharePos, a.byTopic, a.byTopicAdded = settling, sharePos, nil, 0
	a.sampleTook, a.quietCount, a.partialRead, a.lastPartial = time.Since(start), nQuiet, len(sums), false
	a.mu.Unlock()
}

// readShares reads the share-partition state of the share groups of sums
// at places (every group of sums if places is nil), by their groups.
func (a *API) readShares(ctx context.Context, sums []groups.Summary, places []int32, names map[[16]byte]string) map[groupRef]map[TopicPartition]SharePartition {
	shares := map[groupRef]map[TopicPartition]SharePartition{}
	read := func(s groups.Summary) {
		if sh := a.shareState(ctx, s, names); sh != nil {
			shares[groupRef{s.Tenant, s.Group}] = sh
		}
	}
	if places == nil {
		for _, s := range sums {
			read(s)
		}
	}
	for _, i := range places {
		read(sums[i])
	}
	return shares
}

// sampleTime is when a sample starts, and its time: the clock's, if set
// (tests), else the start.
func (a *API) sampleTime() (start, now time.Time) {
	start = time.Now()
	now = start
	if a.clock != nil {
		now = a.clock()
	}
	return start, now
}

// keepProgress keeps the share partitions' progress of those seen by a
// sample, and forgets the rest (under a.mu).
func (a *API) keepProgress(seen map[shareRef]bool) {
	for ref := range a.progress {
		if !seen[ref] {
			delete(a.progress, ref)
		}
	}
}

// sampleChunk is how many groups a sample reads between releases of
// a.mu.
const sampleChunk = 4096

// observeGroup reads group s, at place i of the reading, in full into
// the tracker's reading under way, and returns its history now (under
// a.mu; parts is scratch, seen the share partitions seen).
func (a *API) observeGroup(i int, s *groups.Summary, shares map[TopicPartition]SharePartition, ends map[TopicPartition]PartitionOffsets, now time.Time, parts map[PartitionRef]LagSample, seen map[shareRef]bool) groupLag {
	clear(parts)
	gs := GroupSample{Tenant: s.Tenant, Group: s.Group, Partitions: parts}
	a.shareSamples(*s, shares, ends, now, gs, seen)
	for o := range s.Offsets.All() {
		// The group's topic names are its organisation's; the log's
		// are internal (topics.Internal).
		tp := PartitionRef{Topic: o.Topic, Partition: o.Partition}
		if po, ok := ends[PartitionRef{Topic: topics.Internal(s.Tenant, o.Topic), Partition: o.Partition}]; ok && o.Offset >= 0 {
			gs.Partitions[tp] = LagSample{Committed: o.Offset, CommitAt: time.UnixMilli(o.CommitTimestamp), End: po.End}
		}
	}
	gs.Unsampled = unsampled(*s, shares, gs.Partitions)
	return a.tracker.observeAt(i, now, gs)
}

// samplePartial is Sample of a reading written in place over the last
// one (groups.Reading.InPlace): the groups at r.Changed changed, and no
// group came or went. The groups read are those, the share groups (whose
// sample is also their share-partition state), the groups with an offset
// on a partition whose end offset moved (found by topic, byTopic), and
// those whose history is settling (LagTracker.repeat): a group changed
// in the last readings has runs to trim and a status to evaluate again
// until its window is its last run's. Every other group is settled: its
// sample, history, list entry and status stay as they are, untouched.
// So a reading of a million quiet groups costs what changed, and what is
// shown is what reading every group in full shows (TestSampleQuietSame).
func (a *API) samplePartial(ctx context.Context, r groups.Reading, ends map[TopicPartition]PartitionOffsets, names map[[16]byte]string) {
	sums := r.Groups
	moved := movedEnds(a.ends, ends)
	if len(moved) > 0 && a.byTopic == nil {
		a.byTopic = topicIndex(sums)
	}
	read := make([]int32, 0, len(r.Changed)+len(a.settling)+len(a.sharePos))
	read = append(append(append(read, r.Changed...), a.settling...), a.sharePos...)
	for _, t := range movedTopics(moved) {
		read = append(read, a.byTopic[t]...)
	}
	slices.Sort(read)
	read = slices.Compact(read)
	// Share state is read before the lock: it asks the share
	// coordinator.
	shares := a.readShares(ctx, sums, read, names)
	start, now := a.sampleTime()
	seen := map[shareRef]bool{}
	parts := map[PartitionRef]LagSample{}
	var settling, sharePos []int32
	full, changedEntries, c := 0, false, 0
	a.mu.Lock()
	entries := a.index.entries
	a.tracker.beginPartial(now)
	for k, i32 := range read {
		if k > 0 && k%sampleChunk == 0 {
			a.mu.Unlock()
			a.mu.Lock()
		}
		i := int(i32)
		s := &sums[i]
		for c < len(r.Changed) && r.Changed[c] < i32 {
			c++
		}
		changed := c < len(r.Changed) && r.Changed[c] == i32
		e := entries[i]
		var hist groupLag
		settled, repeated := false, false
		if !changed && s.Type != groups.ShareGroup && !onMoved(s, moved) {
			var stable, ok bool
			if hist, stable, settled, ok = a.tracker.repeatAt(i, s.Tenant, s.Group, now); ok {
				if !stable {
					e.code = codeOf(a.statusOf(hist, e.lag, now))
				}
				repeated = true
			}
		}
		if !repeated {
			hist = a.observeGroup(i, s, shares[groupRef{s.Tenant, s.Group}], ends, now, parts, seen)
			e = a.listEntryOf(i, *s, shares[groupRef{s.Tenant, s.Group}], ends, hist, now)
			settled = a.tracker.settledOf(hist)
			full++
			if changed && a.byTopic != nil {
				a.indexTopics(i32, s)
			}
		}
		if e != entries[i] {
			entries[i], changedEntries = e, true
		}
		if !settled {
			settling = append(settling, i32)
		}
		if s.Type == groups.ShareGroup {
			sharePos = append(sharePos, i32)
		}
	}
	a.keepProgress(seen)
	a.tracker.endPartial()
	a.lastAt, a.shares, a.ends = now, shares, ends
	if changedEntries {
		// The orders by lag and status are made again when asked.
		a.index.orders = &lazyOrders{}
	}
	a.settling, a.sharePos = settling, sharePos
	a.sampleTook, a.quietCount, a.partialRead, a.lastPartial = time.Since(start), len(sums)-full, len(read), true
	a.mu.Unlock()
}

// topicIndex is, for each topic (by the log's name) any of sums has a
// committed offset on, the places of those groups, ascending.
func topicIndex(sums []groups.Summary) map[string][]int32 {
	ix := map[string][]int32{}
	for i := range sums {
		addTopics(ix, int32(i), &sums[i])
	}
	return ix
}

// addTopics adds group s, at place i, to ix under each of its topics.
func addTopics(ix map[string][]int32, i int32, s *groups.Summary) int {
	n, last := 0, ""
	for o := range s.Offsets.All() {
		if n > 0 && o.Topic == last {
			continue
		}
		last = o.Topic
		t := topics.Internal(s.Tenant, o.Topic)
		if l := ix[t]; len(l) == 0 || l[len(l)-1] != i {
			ix[t] = append(l, i)
			n++
		}
	}
	return n
}

// indexTopics adds a changed group to byTopic, which may then hold it
// twice under a topic (found once: the places read are compacted), or
// under a topic it no longer has offsets on (read for nothing): byTopic
// is built again at the next need once the additions are a quarter of
// the groups.
func (a *API) indexTopics(i int32, s *groups.Summary) {
	a.byTopicAdded += addTopics(a.byTopic, i, s)
	if a.byTopicAdded > len(a.last)/4+1024 {
		a.byTopic, a.byTopicAdded = nil, 0
	}
}

// movedTopics are the topics of moved, once each.
func movedTopics(moved map[TopicPartition]bool) []string {
	var out []string
	for tp := range moved {
		out = append(out, tp.Topic)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// compareGroups orders summaries by tenant, then group, as the
// coordinator reads them.
func compareGroups(a, b *groups.Summary) int {
	return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Group, b.Group))
}

// quiet reports whether group s's sample, and its list entry's lag, are
// those of p, its summary of the last reading, moved being the
// partitions whose end offsets moved since: it is not a share group
// (whose sample is also its share-partition state, and moves
// a.progress), and what its sample and lag are read from is as it was:
// its committed offsets are the same Offsets and its assigned partitions
// the same slice (the coordinator keeps a group's summary while the
// group does not change, and never changes one it answered), and none
// of its committed partitions' end offsets moved. The rest of a summary
// (members, state, generation) is read from the reading itself, by
// every view.
func quiet(s, p *groups.Summary, moved map[TopicPartition]bool) bool {
	return s.Tenant == p.Tenant && s.Group == p.Group && s.Type == p.Type && s.Type != groups.ShareGroup &&
		s.Offsets.Same(p.Offsets) && sameSlice(s.Assigned, p.Assigned) && !onMoved(s, moved)
}

// onMoved reports whether group s has a committed offset on one of the
// partitions moved (by the log's names).
func onMoved(s *groups.Summary, moved map[TopicPartition]bool) bool {
	if len(moved) > 0 {
		for o := range s.Offsets.All() {
			if moved[TopicPartition{Topic: topics.Internal(s.Tenant, o.Topic), Partition: o.Partition}] {
				return true
			}
		}
	}
	return false
}

// sameSlice reports whether a and b are the same elements of one array
// (or both empty).
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}

// movedEnds are the partitions (by the log's names) whose end offset
// differs between two readings of them, or that one of them lacks.
func movedEnds(old, cur map[TopicPartition]PartitionOffsets) map[TopicPartition]bool {
	moved := map[TopicPartition]bool{}
	for tp, po := range cur {
		if o, ok := old[tp]; !ok || o.End != po.End {
			moved[tp] = true
		}
	}
	for tp := range old {
		if _, ok := cur[tp]; !ok {
			moved[tp] = true
		}
	}
	return moved
}

// unsampled counts the partitions of group s (those it has offsets of,
// a share group's with state, and those its members are assigned) that
// have no sample among sampled: the group's detail shows each with no
// status, so the group's status counts each as not evaluated.
func unsampled(s groups.Summary, shares map[TopicPartition]SharePartition, sampled map[PartitionRef]LagSample) int {
	missing := map[PartitionRef]bool{}
	for o := range s.Offsets.All() {
		tp := PartitionRef{Topic: o.Topic, Partition: o.Partition}
		if _, ok := sampled[tp]; !ok {
			missing[tp] = true
		}
	}
	for tp := range shares {
		if _, ok := sampled[tp]; !ok {
			missing[tp] = true
		}
	}
	for _, a := range s.Assigned {
		tp := PartitionRef{Topic: a.Topic, Partition: a.Partition}
		if _, ok := sampled[tp]; !ok {
			missing[tp] = true
		}
	}
	return len(missing)
}

func endOffsets(ts []TopicInfo) map[TopicPartition]PartitionOffsets {
	out := map[TopicPartition]PartitionOffsets{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			if p.LogEndOffset >= 0 {
				out[TopicPartition{Topic: t.Name, Partition: p.Partition}] = PartitionOffsets{Start: p.LogStartOffset, End: p.LogEndOffset}
			}
		}
	}
	return out
}

// Groups returns every tenant's groups as the last sample read them, for
// the lag metrics (LagSource.Groups): those metricGroups keeps. Only
// they are built: a scrape of a million quiet groups costs a pass over
// them, not a million maps.
func (a *API) Groups(maxSeries int) ([]GroupOffsets, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	kept, dropped := a.metricGroups(maxSeries)
	out := make([]GroupOffsets, 0, len(kept))
	for _, k := range kept {
		s := &a.last[a.index.entries[k].i]
		if !a.coordinates(s.Tenant, s.Group) {
			continue // its shard moved since the sample
		}
		g := GroupOffsets{Org: security.OrgName(s.Tenant), Group: s.Group, Members: int(s.Members), Committed: make(map[TopicPartition]int64, s.Offsets.Len()),
			Share: a.shares[groupRef{s.Tenant, s.Group}], Ends: a.ends}
		for o := range s.Offsets.All() {
			if o.Offset >= 0 {
				g.Committed[TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
			}
		}
		out = append(out, g)
	}
	return out, dropped
}

// keptGroups is metricGroups' choice for one sample and budget.
type keptGroups struct {
	at      time.Time // the sample's
	max     int
	entries []int32 // positions in the index
	dropped int
}

// metricGroups returns the groups of the last sample a scrape reports
// (as positions in the index, in the list's order by name) within
// maxSeries per-group series (GroupSeries), and how many series it
// leaves out: every group this node coordinates if they fit, else the
// groups with the most lag (the list's order by lag, sorted once a
// sample and shared with it), as many as fit. Chosen once a sample for
// a budget, so that the API's series and the lag collector's name the
// same groups. Under a.mu.
func (a *API) metricGroups(maxSeries int) ([]int32, int) {
	if k := a.kept; k.at.Equal(a.lastAt) && k.max == maxSeries && k.entries != nil {
		return k.entries, k.dropped
	}
	ix, last := a.index, a.last
	series := make([]int32, len(ix.entries)) // by entry; 0: not this node's
	total := 0
	for k, e := range ix.entries {
		s := &last[e.i]
		if !a.coordinates(s.Tenant, s.Group) {
			continue
		}
		n := GroupSeries(committedTopics(s.Offsets), shareTopics(a.shares[groupRef{s.Tenant, s.Group}]))
		series[k] = int32(n)
		total += n
	}
	order := func(i int) int32 { return int32(i) }
	if total > maxSeries {
		order = ix.order(sortLag, last)
	}
	kept := []int32{}
	budget, dropped := maxSeries, 0
	for i := range ix.entries {
		k := order(i)
		n := int(series[k])
		switch {
		case n == 0:
		case n > budget:
			dropped += n
		default:
			budget -= n
			kept = append(kept, k)
		}
	}
	slices.Sort(kept)
	a.kept = keptGroups{at: a.lastAt, max: maxSeries, entries: kept, dropped: dropped}
	return kept, dropped
}

// committedTopics counts the topics of offsets (sorted by topic) with a
// committed offset, each a kafka_consumergroup_lag_sum and
// _current_offset_sum series.
func committedTopics(offsets groups.Offsets) int {
	n, last := 0, ""
	for o := range offsets.All() {
		if o.Offset >= 0 && (n == 0 || o.Topic != last) {
			n++
			last = o.Topic
		}
	}
	return n
}

// shareTopics counts the topics of a share group's share partitions.
func shareTopics(sh map[TopicPartition]SharePartition) int {
	if len(sh) == 0 {
		return 0
	}
	seen := map[string]bool{}
	for tp := range sh {
		seen[tp.Topic] = true
	}
	return len(seen)
}

// sampledAt is when the last sample was read (zero: none yet).
func (a *API) sampledAt() time.Time {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.lastAt
}

// sampledGroup returns a group's offsets and share partitions as the
// last sample read them (ok: it did), the end offsets its lag was read
// against (before the first sample, the topics' as they are) and when it
// was read.
func (a *API) sampledGroup(tenant, group string) (offsets groups.Offsets, shares map[TopicPartition]SharePartition, ends map[TopicPartition]PartitionOffsets, at time.Time, ok bool) {
	a.mu.RLock()
	ends, at = a.ends, a.lastAt
	i := -1
	if a.lastSorted {
		k, found := slices.BinarySearchFunc(a.last, groupRef{tenant, group}, func(s groups.Summary, r groupRef) int {
			return cmp.Or(strings.Compare(s.Tenant, r.Tenant), strings.Compare(s.Group, r.Group))
		})
		if found {
			i = k
		}
	} else {
		i = slices.IndexFunc(a.last, func(s groups.Summary) bool { return s.Tenant == tenant && s.Group == group })
	}
	if i >= 0 {
		offsets, shares, ok = a.last[i].Offsets, a.shares[groupRef{tenant, group}], true
	}
	a.mu.RUnlock()
	if ends == nil {
		ends = endOffsets(a.cfg.Source.Topics())
	}
	return offsets, shares, ends, at, ok
}

// lagOf evaluates a group (under a.mu).
func (a *API) lagOf(tenant, group string, now time.Time) (GroupLag, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tracker.Group(tenant, group, now)
}

//go:embed openapi.json
var openAPI []byte

// Handler serves the API's routes (mount it on a mux at /api/).
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openAPI)
	})
	mux.HandleFunc("GET /api/v1/node", func(w http.ResponseWriter, r *http.Request) {
		n := a.cfg.Source.Node()
		if c := callerOf(r); !c.Operator {
			// Where the state lives is the operator's business.
			n.Store = StoreInfo{Kind: n.Store.Kind}
			n.Org = c.Org()
		}
		writeJSON(w, http.StatusOK, n)
	})
	mux.HandleFunc("GET /api/v1/topics", func(w http.ResponseWriter, r *http.Request) {
		// Topics are not scoped to organisations in the topic log yet:
		// listing them would show every organisation's.
		if !operatorOnly(w, r) {
			return
		}
		ts := a.cfg.Source.Topics()
		if ts == nil {
			ts = []TopicInfo{}
		}
		a.markLeaders(ts)
		writeJSON(w, http.StatusOK, map[string]any{"topics": ts})
	})
	mux.HandleFunc("GET /api/v1/groups", a.listGroups)
	mux.HandleFunc("GET /api/v1/groups/{group}", a.describeGroup)
	mux.HandleFunc("GET /api/v1/groups/{group}/timeline", a.groupTimeline)
	mux.HandleFunc("GET /api/v1/cluster", a.clusterNodes)
	mux.HandleFunc("GET /api/v1/cluster/events", func(w http.ResponseWriter, _ *http.Request) {
		// Every caller's: which nodes serve is what Metadata tells any
		// client.
		if a.cfg.ClusterEvents == nil {
			writeJSON(w, http.StatusOK, map[string]any{"cluster": false, "events": []any{}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"cluster": true, "events": a.cfg.ClusterEvents()})
	})
	a.orgRoutes(mux)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path+" (see /api/v1/openapi.json)")
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// GroupSummary is a group in GET /api/v1/groups.
type GroupSummary struct {
	Group string `json:"group"`
	// Org is the group's organisation, Tenant its tenant ("" for the
	// default organisation; kept for older clients).
	Org          string `json:"org"`
	Tenant       string `json:"tenant"`
	CgpID        string `json:"cgp_id"`
	RRL          string `json:"rrl"`
	Type         string `json:"type"`
	ProtocolType string `json:"protocol_type"`
	State        string `json:"state"`
	Members      int    `json:"members"`
	// Coordinator is the node that coordinates the group (cluster mode;
	// absent on a single node).
	Coordinator *int32 `json:"coordinator,omitempty"`
	// SampledAt is when the lag sampler (the coordinator's) read the
	// offsets and lag shown: two views of a group at one SampledAt show
	// the same numbers. In a group's detail, its members are read with
	// the request; a group the sampler has not read yet has none, and
	// its offsets are read with the request.
	SampledAt *time.Time `json:"sampled_at,omitempty"`
	// TotalLag sums the lag of the committed partitions whose high
	// watermark this node knows; a share group's, of its share
	// partitions' (SharePartition.Lag).
	TotalLag           int64      `json:"total_lag"`
	Status             Status     `json:"status"`
	TimeToClearSeconds *float64   `json:"time_to_clear_seconds"`
	LagTrend           []LagPoint `json:"lag_trend"`
	// Share sums a share group's records in flight over the partitions
	// whose state this node holds; absent for other groups.
	Share *ShareCounts `json:"share,omitempty"`
}

// GroupDetail is GET /api/v1/groups/{group}.
type GroupDetail struct {
	GroupSummary
	// Balancer is a classic group's chosen protocol (its client-side
	// assignor) or a consumer or share group's server-side assignor.
	Balancer        string            `json:"balancer"`
	Generation      *int32            `json:"generation,omitempty"`
	Epoch           *int32            `json:"epoch,omitempty"`
	AssignmentEpoch *int32            `json:"assignment_epoch,omitempty"`
	MemberList      []MemberDetail    `json:"members"` // shadows the count
	Partitions      []PartitionDetail `json:"partitions"`
	Timeline        any               `json:"timeline"`
	Configs         []GroupConfig     `json:"configs"`
}

// MemberDetail is a member of a group.
type MemberDetail struct {
	MemberID         string            `json:"member_id"`
	InstanceID       string            `json:"instance_id,omitempty"`
	ClientID         string            `json:"client_id"`
	Host             string            `json:"host"`
	MemberEpoch      *int32            `json:"member_epoch,omitempty"`
	Assignment       []TopicPartitions `json:"assignment"`
	TargetAssignment []TopicPartitions `json:"target_assignment,omitempty"`
}

// TopicPartitions is an assignment's partitions of one topic.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// PartitionDetail is a partition a group commits to or is assigned, or a
// share group's share partition.
type PartitionDetail struct {
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	CommittedOffset int64  `json:"committed_offset"` // -1: none
	// CommittedAt is when the offset was committed; absent with none.
	CommittedAt    *time.Time `json:"committed_at,omitempty"`
	LogStartOffset int64      `json:"log_start_offset"` // -1: unknown here
	LogEndOffset   int64      `json:"log_end_offset"`   // -1: unknown here
	// Lag is absent with no commit, or when this node does not lead the
	// partition; a share group's is its share partition's
	// (SharePartition.Lag), absent with no state.
	Lag      *int64 `json:"lag"`
	MemberID string `json:"member_id"`
	// MemberIDs are the members a share group assigns the partition to
	// (it may be several); absent for other groups.
	MemberIDs []string `json:"member_ids,omitempty"`
	// Share is a share group's share-partition state; absent for other
	// groups and for a partition with no state held on this node.
	Share              *SharePartition `json:"share,omitempty"`
	Status             Status          `json:"status"`
	TimeToClearSeconds *float64        `json:"time_to_clear_seconds"`
	LagHistory         []LagPoint      `json:"lag_history"`
}

// summary is s with its lag; shares are a share group's partitions.
func (a *API) summary(s groups.Summary, shares map[TopicPartition]SharePartition, ends map[TopicPartition]PartitionOffsets, now time.Time) GroupSummary {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.summaryLocked(s, shares, ends, now)
}

// summaryLocked is summary with a.mu held: a page of the list takes the
// lock once for all its groups, not once each (the sampler takes it a
// chunk at a time, and a page of a thousand would wait for a thousand
// chunks).
func (a *API) summaryLocked(s groups.Summary, shares map[TopicPartition]SharePartition, ends map[TopicPartition]PartitionOffsets, now time.Time) GroupSummary {
	g := GroupSummary{
		Group: s.Group, Org: security.OrgName(s.Tenant), Tenant: s.Tenant, CgpID: s.ID, RRL: RRL(s.Tenant, s.Group),
		Type: s.Type.String(), ProtocolType: s.ProtocolType, State: s.State.String(), Members: int(s.Members),
		LagTrend: []LagPoint{},
	}
	if a.cfg.Cluster != nil {
		self := a.cfg.Cluster.Self()
		g.Coordinator = &self
	}
	for o := range s.Offsets.All() {
		// The log's name of the group's topic (topics.Internal).
		if po, ok := ends[TopicPartition{Topic: topics.Internal(s.Tenant, o.Topic), Partition: o.Partition}]; ok && o.Offset >= 0 {
			g.TotalLag += max(0, po.End-o.Offset)
		}
	}
	if s.Type == groups.ShareGroup {
		g.Share = shareTotals(shares)
		for tp, p := range shares {
			if po, ok := ends[TopicPartition{Topic: topics.Internal(s.Tenant, tp.Topic), Partition: tp.Partition}]; ok {
				g.TotalLag += p.Lag(po.End)
			}
		}
	}
	if l, ok := a.tracker.Group(s.Tenant, s.Group, now); ok {
		g.Status, g.TimeToClearSeconds, g.LagTrend = l.Status, seconds(l.TimeToClear), l.Trend
	} else if g.TotalLag == 0 {
		g.Status, g.TimeToClearSeconds = StatusOK, seconds(new(time.Duration))
	}
	return g
}

func seconds(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := d.Seconds()
	return &s
}

func (a *API) find(w http.ResponseWriter, r *http.Request) (groups.Summary, bool) {
	name := r.PathValue("group")
	tenant, ok := groupTenant(w, r)
	if !ok || a.proxyGroup(w, r, tenant, name) {
		return groups.Summary{}, false
	}
	sum, ok, err := a.cfg.Source.InspectGroup(r.Context(), tenant, name)
	switch {
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "reading the group: "+err.Error())
		return groups.Summary{}, false
	case !ok:
		writeError(w, http.StatusNotFound, "group "+strconv.Quote(name)+" of organisation "+security.OrgName(tenant)+" not found on this node")
		return groups.Summary{}, false
	}
	return sum, true
}

func (a *API) groupTimeline(w http.ResponseWriter, r *http.Request) {
	s, ok := a.find(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"rebalances": a.timeline(s.Tenant, s.Group)})
}

func (a *API) timeline(tenant, group string) any {
	if a.cfg.Timeline == nil {
		return []any{}
	}
	return a.cfg.Timeline(tenant, group)
}

func (a *API) describeGroup(w http.ResponseWriter, r *http.Request) {
	s, ok := a.find(w, r)
	if !ok {
		return
	}
	// The group's offsets and lag as the last sample read them, as the
	// list and /metrics show them; its members as they are. A group the
	// sampler has not read yet is read now, against the sample's end
	// offsets.
	offsets, shares, ends, at, sampled := a.sampledGroup(s.Tenant, s.Group)
	if sampled {
		s.Offsets = offsets
	}
	if !sampled && s.Type == groups.ShareGroup {
		shares = a.shareState(r.Context(), s, topicNames(a.cfg.Source.Topics()))
	}
	// Evaluated as of the reading shown, as the list evaluates it.
	now := time.Now()
	if sampled {
		now = at
	}
	d := GroupDetail{GroupSummary: a.summary(s, shares, ends, now), MemberList: []MemberDetail{}, Partitions: []PartitionDetail{}}
	if sampled {
		at := at.UTC()
		d.SampledAt = &at
	}
	if err := a.describeMembers(r.Context(), s, &d); err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	// A share group's partitions may have several members each.
	owners := map[TopicPartition][]string{}
	for _, m := range d.MemberList {
		for _, t := range m.Assignment {
			for _, p := range t.Partitions {
				tp := TopicPartition{Topic: t.Topic, Partition: p}
				owners[tp] = append(owners[tp], m.MemberID)
			}
		}
	}
	lag, _ := a.lagOf(s.Tenant, s.Group, now)
	seen := map[TopicPartition]bool{}
	add := func(tp TopicPartition, o *groups.OffsetSummary) {
		if seen[tp] {
			return
		}
		seen[tp] = true
		p := PartitionDetail{Topic: tp.Topic, Partition: tp.Partition, CommittedOffset: -1, LogStartOffset: -1, LogEndOffset: -1, LagHistory: []LagPoint{}}
		if s.Type == groups.ShareGroup {
			p.MemberIDs = slices.Sorted(slices.Values(owners[tp]))
		} else if ms := owners[tp]; len(ms) > 0 {
			p.MemberID = ms[0]
		}
		po, known := ends[TopicPartition{Topic: topics.Internal(s.Tenant, tp.Topic), Partition: tp.Partition}]
		if known {
			p.LogStartOffset, p.LogEndOffset = po.Start, po.End
		}
		if o != nil {
			p.CommittedOffset = o.Offset
			at := time.UnixMilli(o.CommitTimestamp).UTC()
			p.CommittedAt = &at
			if known && o.Offset >= 0 {
				l := max(0, po.End-o.Offset)
				p.Lag = &l
			}
		}
		if sp, ok := shares[tp]; ok {
			p.Share = &sp
			if known {
				l := sp.Lag(po.End)
				p.Lag = &l
			}
		}
		if pl, ok := lag.Partitions[tp]; ok {
			p.Status, p.TimeToClearSeconds, p.LagHistory = pl.Status, seconds(pl.TimeToClear), pl.History
		}
		d.Partitions = append(d.Partitions, p)
	}
	for o := range s.Offsets.All() {
		add(TopicPartition{Topic: o.Topic, Partition: o.Partition}, &o)
	}
	for tp := range shares {
		add(tp, nil)
	}
	for tp := range owners {
		add(tp, nil)
	}
	slices.SortFunc(d.Partitions, func(a, b PartitionDetail) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	// The group's status over every partition it shows, evaluated or
	// not: the tracker knows only those it sampled, not one assigned and
	// never committed, nor a group first seen since its last reading.
	statuses := make([]Status, len(d.Partitions))
	for i, p := range d.Partitions {
		statuses[i] = p.Status
	}
	d.Status = groupStatus(statuses)
	d.Timeline = a.timeline(s.Tenant, s.Group)
	// The group's own tenant: find answers only within the caller's
	// organisation.
	d.Configs = a.cfg.Source.GroupConfigs(s.Tenant, s.Group)
	if d.Configs == nil {
		d.Configs = []GroupConfig{}
	}
	writeJSON(w, http.StatusOK, d)
}

// describeMembers fills the members and the protocol's part of d through
// DescribeGroups (classic), ConsumerGroupDescribe (consumer) or
// ShareGroupDescribe (share).
func (a *API) describeMembers(ctx context.Context, s groups.Summary, d *GroupDetail) error {
	if s.Type == groups.ShareGroup {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{s.Group}
		resp, ok := a.cfg.Source.Handle(ctx, s.Tenant, req).(*kmsg.ShareGroupDescribeResponse)
		if !ok || len(resp.Groups) != 1 {
			return errUnexpected
		}
		g := resp.Groups[0]
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return err
		}
		d.Balancer = g.Assignor
		d.Epoch, d.AssignmentEpoch = &g.GroupEpoch, &g.AssignmentEpoch
		for _, m := range g.Members {
			md := MemberDetail{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, MemberEpoch: &m.MemberEpoch, Assignment: []TopicPartitions{}}
			for _, t := range m.Assignment.TopicPartitions {
				md.Assignment = append(md.Assignment, TopicPartitions{Topic: t.Topic, Partitions: sorted(t.Partitions)})
			}
			sortTopics(md.Assignment)
			d.MemberList = append(d.MemberList, md)
		}
		return nil
	}
	if s.Type == groups.ConsumerGroup {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{s.Group}
		resp, ok := a.cfg.Source.Handle(ctx, s.Tenant, req).(*kmsg.ConsumerGroupDescribeResponse)
		if !ok || len(resp.Groups) != 1 {
			return errUnexpected
		}
		g := resp.Groups[0]
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return err
		}
		d.Balancer = g.AssignorName
		d.Epoch, d.AssignmentEpoch = &g.Epoch, &g.AssignmentEpoch
		for _, m := range g.Members {
			md := MemberDetail{
				MemberID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, Host: m.ClientHost,
				MemberEpoch: &m.MemberEpoch, Assignment: fromAssignment(m.Assignment), TargetAssignment: fromAssignment(m.TargetAssignment),
			}
			d.MemberList = append(d.MemberList, md)
		}
		return nil
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{s.Group}
	resp, ok := a.cfg.Source.Handle(ctx, s.Tenant, req).(*kmsg.DescribeGroupsResponse)
	if !ok || len(resp.Groups) != 1 {
		return errUnexpected
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		return err
	}
	d.Balancer = g.Protocol
	d.Generation = &s.Generation
	for _, m := range g.Members {
		md := MemberDetail{MemberID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, Host: m.ClientHost, Assignment: []TopicPartitions{}}
		if g.ProtocolType == "consumer" && len(m.MemberAssignment) > 0 {
			var ca kmsg.ConsumerMemberAssignment
			if ca.ReadFrom(m.MemberAssignment) == nil {
				for _, t := range ca.Topics {
					md.Assignment = append(md.Assignment, TopicPartitions{Topic: t.Topic, Partitions: sorted(t.Partitions)})
				}
			}
		}
		sortTopics(md.Assignment)
		d.MemberList = append(d.MemberList, md)
	}
	return nil
}

var errUnexpected = errorString("the coordinator answered unexpectedly")

type errorString string

func (e errorString) Error() string { return string(e) }

func fromAssignment(a kmsg.Assignment) []TopicPartitions {
	out := []TopicPartitions{}
	for _, t := range a.TopicPartitions {
		out = append(out, TopicPartitions{Topic: t.Topic, Partitions: sorted(t.Partitions)})
	}
	sortTopics(out)
	return out
}

func sorted(ps []int32) []int32 {
	out := slices.Clone(ps)
	slices.Sort(out)
	if out == nil {
		out = []int32{}
	}
	return out
}

func sortTopics(ts []TopicPartitions) {
	slices.SortFunc(ts, func(a, b TopicPartitions) int { return cmp.Compare(a.Topic, b.Topic) })
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

var slugUnsafe = regexp.MustCompile(`[^a-z0-9._-]+`)

// RRL is a group's resource locator, <org>/consumer-groups/<slug>, as
// Rafka defines it: the org is the tenant's organisation (DefaultOrg for the default
// one, security.DefaultOrg), the slug the group id lowercased with every run of characters
// other than a–z, 0–9, '.', '_' and '-' made one '-', trimmed of '-'
// ("_" when nothing is left). Two group ids may share a slug; the cgp_ id
// is what identifies a group.
func RRL(tenant, group string) string {
	org := security.OrgName(tenant)
	slug := strings.Trim(slugUnsafe.ReplaceAllString(strings.ToLower(group), "-"), "-")
	if slug == "" {
		slug = "_"
	}
	return org + "/consumer-groups/" + slug
}

// Describe implements prometheus.Collector: the lag status metrics.
func (a *API) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{a.statusDesc, a.clearDesc, a.sampleDesc, a.historyBytesDesc, a.historyReadingsDesc, a.groupsDesc, a.offsetsDesc, a.pendingDesc, a.genDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: each group's status, time to
// clear and generation, and the groups, offsets and pending members held
// by organisation, from the last sample. Every series carries the org
// label: /metrics shows a caller who is not an operator its own
// organisation's series only (metricsFor).
func (a *API) Collect(ch chan<- prometheus.Metric) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Evaluated as of the last reading, as the list and the detail are.
	now := a.lastAt
	if now.IsZero() {
		now = time.Now()
	}
	ch <- prometheus.MustNewConstMetric(a.sampleDesc, prometheus.GaugeValue, a.sampleTook.Seconds())
	hb, hr := a.tracker.HistoryBytes()
	ch <- prometheus.MustNewConstMetric(a.historyBytesDesc, prometheus.GaugeValue, float64(hb))
	ch <- prometheus.MustNewConstMetric(a.historyReadingsDesc, prometheus.GaugeValue, float64(hr))
	type typeState struct {
		org   string
		typ   groups.GroupType
		state groups.GroupState
	}
	counts := map[typeState]int{}
	offsets, pending := map[string]int{}, map[string]int{}
	for _, s := range a.last {
		if !a.coordinates(s.Tenant, s.Group) {
			continue
		}
		org := security.OrgName(s.Tenant)
		counts[typeState{org, s.Type, s.State}]++
		offsets[org] += s.Offsets.Len()
		pending[org] += int(s.PendingMembers)
	}
	// The default organisation's totals are there even with no groups,
	// as the unlabelled totals were.
	if _, ok := offsets[security.DefaultOrg]; !ok {
		offsets[security.DefaultOrg], pending[security.DefaultOrg] = 0, 0
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(a.groupsDesc, prometheus.GaugeValue, float64(n), k.org, k.typ.String(), k.state.String())
	}
	for org, n := range offsets {
		ch <- prometheus.MustNewConstMetric(a.offsetsDesc, prometheus.GaugeValue, float64(n), org)
		ch <- prometheus.MustNewConstMetric(a.pendingDesc, prometheus.GaugeValue, float64(pending[org]), org)
	}
	// Per group: the groups the budget keeps (metricGroups).
	kept, _ := a.metricGroups(a.cfg.MaxGroupSeries)
	for _, k := range kept {
		s := &a.last[a.index.entries[k].i]
		if !a.coordinates(s.Tenant, s.Group) {
			continue // its shard moved since the sample
		}
		org := security.OrgName(s.Tenant)
		ch <- prometheus.MustNewConstMetric(a.genDesc, prometheus.GaugeValue, float64(s.Generation), org, s.Group, s.Type.String())
		// The tracker's history, not the entry's copy of it: a scrape
		// may come between a reading's chunks, which re-encode some
		// histories in place. Evaluated without the trend and histories
		// a group's detail shows.
		h := a.tracker.history(s.Tenant, s.Group)
		if h == nil {
			continue // no samples
		}
		st, clear := a.tracker.evaluateOf(h, now)
		status := string(st)
		if status == "" {
			status = "UNKNOWN"
		}
		ch <- prometheus.MustNewConstMetric(a.statusDesc, prometheus.GaugeValue, 1, org, s.Group, status)
		if clear != nil {
			ch <- prometheus.MustNewConstMetric(a.clearDesc, prometheus.GaugeValue, clear.Seconds(), org, s.Group)
		}
	}
}
