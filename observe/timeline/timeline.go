// Package timeline is the rebalance timeline: an observer that keeps, for
// each group, its last rebalances (when, why, who, the generation or
// epoch, how long each phase took, how many partitions moved, and the
// member events around it), for an operator asking "why did my group
// rebalance, and what took so long?". No Kafka broker keeps this.
//
// It is built from the group events the coordinator reports
// (observe.GroupEvent: the cause, phases and partitions moved come from
// the group machines, coordinator/groups) and kept in memory only, within
// bounds: the last PerGroup rebalances of each of at most Groups groups
// (the least recently active is forgotten first). Full at the default
// bounds (10,000 groups × 20 rebalances, a few member events each) it
// takes about 90 MiB; most groups hold far fewer. It survives nothing: a
// restart starts an empty timeline, and a node shows only the groups it
// coordinated since it started. That is on purpose. The timeline is a
// diagnostic; writing it as coordinator records would cost the commit path
// and the store writes for every rebalance, and a restart is itself
// visible in the node's log. Times are the coordinator's (the now its
// machines were given), which is the wall clock in a running node.
//
// In cluster mode it also keeps the last Options.ClusterEvents of the
// cluster's node events this node saw (observe.ClusterEvent: a node
// joined, lost, rejoined or draining, this node suspended or resumed),
// in memory likewise, for the admin API's /api/v1/cluster/events.
//
// It must not block the coordinator: every event takes one mutex for a
// few map and slice operations, and readers copy what they return.
package timeline

import (
	"container/list"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/observe"
)

// Options bound the timeline; zero values take the defaults.
type Options struct {
	// PerGroup is how many rebalances are kept per group, the newest.
	// Default 20; at most 1,000.
	PerGroup int
	// Groups is how many groups are tracked; a new group beyond it
	// evicts the one least recently active (whose last event is the
	// oldest). Default 10,000; at most 1,000,000.
	Groups int
	// MemberEvents is how many member events (joined, left, expired,
	// fenced) are kept with each rebalance; later ones are only counted.
	// Default 8; at most 1,000.
	MemberEvents int
	// ClusterEvents is how many of the cluster's node events (cluster
	// mode: a node joined, lost, rejoined, draining; this node
	// suspended, resumed) are kept, the newest. Default 100; at most
	// 10,000.
	ClusterEvents int
}

// The defaults and limits of Options.
const (
	DefaultPerGroup      = 20
	DefaultGroups        = 10_000
	DefaultMemberEvents  = 8
	DefaultClusterEvents = 100
	maxClusterEvents     = 10_000
	maxPerGroup          = 1_000
	maxGroups            = 1_000_000
	maxMemberEvents      = 1_000
)

func (o Options) withDefaults() Options {
	pick := func(v, def, limit int) int {
		if v <= 0 {
			return def
		}
		return min(v, limit)
	}
	o.PerGroup = pick(o.PerGroup, DefaultPerGroup, maxPerGroup)
	o.Groups = pick(o.Groups, DefaultGroups, maxGroups)
	o.MemberEvents = pick(o.MemberEvents, DefaultMemberEvents, maxMemberEvents)
	o.ClusterEvents = pick(o.ClusterEvents, DefaultClusterEvents, maxClusterEvents)
	return o
}

// Rebalance is one rebalance of a group, as the timeline tells it.
type Rebalance struct {
	Protocol string // "classic", "consumer" or "share"
	// Generation is the classic generation formed, or the consumer or
	// share group's epoch reached (while in progress, the latest
	// started).
	Generation int32
	// StartedAt is the first start (zero: not known, the rebalance began
	// before its shard loaded); CompletedAt the completion (zero while in
	// progress, or if it was abandoned).
	StartedAt, CompletedAt time.Time
	// InProgress: started, not completed yet.
	InProgress bool
	// Abandoned: it never completed, and a later rebalance started in
	// its place: the coordinator forgot it (a classic group's rebalance
	// in progress does not survive its shard reloading).
	Abandoned bool
	// Duration is from StartedAt to CompletedAt (0 while in progress, or
	// when the start is not known).
	Duration time.Duration
	// Restarts counts the times it started over before completing (a
	// classic group back to PreparingRebalance, a consumer group's epoch
	// bumped again); cause and who stay the first start's.
	Restarts int
	// Cause is why it started (observe.Cause's names: member-joined,
	// member-left, ...); Reason the coordinator's words (Kafka's, for a
	// classic group, with the client's reason).
	Cause  string
	Reason string
	// MemberID and InstanceID name the member that caused it, if one did.
	MemberID, InstanceID string
	// MembersBefore is the group's member count at the previous
	// rebalance's completion (or, for the first the timeline saw, before
	// the first event it saw); Members after it completed (while in
	// progress, as the latest event said).
	MembersBefore, Members int
	// Phases is how long each phase took (observe.Phases: classic join
	// and sync; consumer assignment, revocation and reconciliation, the
	// last in Sync; share assignment alone, its members taking their
	// targets at once). Known once completed.
	Phases observe.Phases
	// PartitionsMoved is how many partitions changed owner (a share
	// group's: the (partition, member) pairs its new target adds, a
	// partition having several members); -1 when not known (in progress, a classic group of another protocol type than
	// "consumer", a start before its shard loaded).
	PartitionsMoved int
	// MemberEvents are the group's member events from the previous
	// rebalance's completion to this one's, the first Options.MemberEvents
	// of them; MemberEventsDropped counts the rest.
	MemberEvents        []MemberEvent
	MemberEventsDropped int
}

// MemberEvent is a member joining, leaving, expiring or being fenced.
type MemberEvent struct {
	At         time.Time
	Kind       string // "member-joined", "member-left", "member-expired", "member-fenced"
	MemberID   string
	InstanceID string
	Reason     string
}

// rebalanceJSON is Rebalance in the admin API's JSON: snake case,
// durations in milliseconds.
type rebalanceJSON struct {
	Protocol            string            `json:"protocol"`
	Generation          int32             `json:"generation"`
	StartedAt           time.Time         `json:"started_at,omitzero"`
	CompletedAt         time.Time         `json:"completed_at,omitzero"`
	InProgress          bool              `json:"in_progress"`
	Abandoned           bool              `json:"abandoned,omitempty"`
	DurationMS          float64           `json:"duration_ms"`
	Restarts            int               `json:"restarts"`
	Cause               string            `json:"cause"`
	Reason              string            `json:"reason"`
	MemberID            string            `json:"member_id,omitempty"`
	InstanceID          string            `json:"instance_id,omitempty"`
	MembersBefore       int               `json:"members_before"`
	Members             int               `json:"members"`
	Phases              phasesJSON        `json:"phases"`
	PartitionsMoved     int               `json:"partitions_moved"`
	MemberEvents        []memberEventJSON `json:"member_events,omitempty"`
	MemberEventsDropped int               `json:"member_events_dropped,omitempty"`
}

type phasesJSON struct {
	JoinMS       float64 `json:"join_ms"`
	SyncMS       float64 `json:"sync_ms"`
	AssignmentMS float64 `json:"assignment_ms"`
	RevocationMS float64 `json:"revocation_ms"`
}

type memberEventJSON struct {
	At         time.Time `json:"at"`
	Kind       string    `json:"kind"`
	MemberID   string    `json:"member_id"`
	InstanceID string    `json:"instance_id,omitempty"`
	Reason     string    `json:"reason,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fromMS(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// MarshalJSON writes r in snake case with durations in milliseconds
// (started_at, completed_at, duration_ms, generation, protocol, cause,
// reason, member_id, instance_id, members, phases {join_ms, sync_ms,
// revocation_ms, assignment_ms}, partitions_moved, in_progress, ...).
func (r Rebalance) MarshalJSON() ([]byte, error) {
	j := rebalanceJSON{
		Protocol: r.Protocol, Generation: r.Generation, StartedAt: r.StartedAt, CompletedAt: r.CompletedAt,
		InProgress: r.InProgress, Abandoned: r.Abandoned, DurationMS: ms(r.Duration), Restarts: r.Restarts,
		Cause: r.Cause, Reason: r.Reason, MemberID: r.MemberID, InstanceID: r.InstanceID,
		MembersBefore: r.MembersBefore, Members: r.Members,
		Phases: phasesJSON{
			JoinMS: ms(r.Phases.Join), SyncMS: ms(r.Phases.Sync),
			AssignmentMS: ms(r.Phases.Assignment), RevocationMS: ms(r.Phases.Revocation),
		},
		PartitionsMoved: r.PartitionsMoved, MemberEventsDropped: r.MemberEventsDropped,
	}
	for _, e := range r.MemberEvents {
		j.MemberEvents = append(j.MemberEvents, memberEventJSON(e))
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes (for the admin API's
// clients).
func (r *Rebalance) UnmarshalJSON(b []byte) error {
	var j rebalanceJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Rebalance{
		Protocol: j.Protocol, Generation: j.Generation, StartedAt: j.StartedAt, CompletedAt: j.CompletedAt,
		InProgress: j.InProgress, Abandoned: j.Abandoned, Duration: fromMS(j.DurationMS), Restarts: j.Restarts,
		Cause: j.Cause, Reason: j.Reason, MemberID: j.MemberID, InstanceID: j.InstanceID,
		MembersBefore: j.MembersBefore, Members: j.Members,
		Phases: observe.Phases{
			Join: fromMS(j.Phases.JoinMS), Sync: fromMS(j.Phases.SyncMS),
			Assignment: fromMS(j.Phases.AssignmentMS), Revocation: fromMS(j.Phases.RevocationMS),
		},
		PartitionsMoved: j.PartitionsMoved, MemberEventsDropped: j.MemberEventsDropped,
	}
	for _, e := range j.MemberEvents {
		r.MemberEvents = append(r.MemberEvents, MemberEvent(e))
	}
	return nil
}

// Key names a group: its tenant and name.
type Key struct {
	Tenant string `json:"tenant,omitempty"`
	Group  string `json:"group"`
}

// Observer keeps the timeline. Create it with New; install it as (or in)
// the node's observer (node.Config.Observer, with observe.Multi beside
// others). It only wants group events.
type Observer struct {
	observe.Nop
	opts Options

	mu     sync.Mutex
	groups map[Key]*list.Element // of *group
	lru    list.List             // most recently active first
	// cluster are the last cluster events, oldest first.
	cluster []ClusterEvent
}

var (
	_ observe.Observer        = (*Observer)(nil)
	_ observe.ClusterObserver = (*Observer)(nil)
)

// ClusterEvent is a change in the cluster's nodes this node saw
// (observe.ClusterEvent).
type ClusterEvent struct {
	At time.Time `json:"at"`
	// Event is joined, lost, rejoined, draining, suspended or resumed.
	Event string `json:"event"`
	Node  int32  `json:"node"`
	// Self: the event is about this node.
	Self   bool   `json:"self,omitempty"`
	Kafka  string `json:"kafka,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Serving, Draining and Suspended are the nodes in each state after
	// the event, as this node saw them.
	Serving   int `json:"serving"`
	Draining  int `json:"draining"`
	Suspended int `json:"suspended"`
}

// Cluster records a cluster event, forgetting the oldest beyond
// Options.ClusterEvents.
func (o *Observer) Cluster(e observe.ClusterEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.cluster) >= o.opts.ClusterEvents {
		o.cluster = append(o.cluster[:0], o.cluster[len(o.cluster)-o.opts.ClusterEvents+1:]...)
	}
	o.cluster = append(o.cluster, ClusterEvent{At: e.At, Event: e.Kind.String(), Node: e.Node, Self: e.Self, Kafka: e.Kafka,
		Reason: e.Reason, Serving: e.Serving, Draining: e.Draining, Suspended: e.Suspended})
}

// ClusterEvents returns the cluster events kept, newest first (a copy).
func (o *Observer) ClusterEvents() []ClusterEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]ClusterEvent, len(o.cluster))
	for i, e := range o.cluster {
		out[len(out)-1-i] = e
	}
	return out
}

// group is one group's timeline.
type group struct {
	key Key
	// past holds the rebalances, oldest first, at most PerGroup: a
	// ring once full (head is the oldest then).
	past []Rebalance
	head int
	// open is whether the newest rebalance is in progress.
	open bool
	// base is the member count at the last completion (or before the
	// first event seen): the next start's MembersBefore.
	base int
	// quiet are the member events since the last completion while no
	// rebalance is in progress, for the next one; quietDropped counts
	// those beyond the bound.
	quiet        []MemberEvent
	quietDropped int
}

// New returns an empty timeline.
func New(opts Options) *Observer {
	o := &Observer{opts: opts.withDefaults(), groups: map[Key]*list.Element{}}
	o.lru.Init()
	return o
}

// WantsRequests is false: the timeline needs group and cluster events
// only.
func (o *Observer) WantsRequests() bool { return false }

// Group records a group event.
func (o *Observer) Group(_ context.Context, e observe.GroupEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.touch(Key{e.Tenant, e.Group}, e)
	switch e.Kind {
	case observe.RebalanceStarted:
		g.started(e, o.opts)
	case observe.RebalanceCompleted:
		g.completed(e, o.opts)
	case observe.MemberJoined, observe.MemberLeft, observe.MemberExpired, observe.MemberFenced:
		g.member(e, o.opts)
	}
}

// touch returns k's timeline, created if new (evicting the least recently
// active group if the bound is reached), made the most recently active.
func (o *Observer) touch(k Key, e observe.GroupEvent) *group {
	if el, ok := o.groups[k]; ok {
		o.lru.MoveToFront(el)
		return el.Value.(*group)
	}
	if len(o.groups) >= o.opts.Groups {
		last := o.lru.Back()
		delete(o.groups, last.Value.(*group).key)
		o.lru.Remove(last)
	}
	// The members before the first event seen.
	before := e.Members
	switch e.Kind {
	case observe.MemberJoined:
		before--
	case observe.MemberLeft, observe.MemberExpired, observe.MemberFenced:
		before++
	}
	g := &group{key: k, base: before}
	o.groups[k] = o.lru.PushFront(g)
	return g
}

// newest returns the newest rebalance (there must be one).
func (g *group) newest() *Rebalance {
	i := len(g.past) - 1
	if len(g.past) == cap(g.past) && g.head > 0 {
		i = g.head - 1
	}
	return &g.past[i]
}

// push adds a rebalance, dropping the oldest beyond perGroup.
func (g *group) push(r Rebalance, perGroup int) *Rebalance {
	if g.past == nil {
		g.past = make([]Rebalance, 0, perGroup)
	}
	if len(g.past) < perGroup {
		g.past = append(g.past, r)
		return &g.past[len(g.past)-1]
	}
	g.past[g.head] = r
	p := &g.past[g.head]
	g.head = (g.head + 1) % perGroup
	return p
}

func (g *group) started(e observe.GroupEvent, opts Options) {
	if g.open {
		r := g.newest()
		if e.Protocol == r.Protocol && e.Generation > r.Generation {
			// The same rebalance, starting over.
			r.Generation, r.Members = e.Generation, e.Members
			r.Restarts++
			return
		}
		// A start that does not go forward: the coordinator forgot the
		// one under way (a classic group's, when its shard reloaded).
		r.InProgress, r.Abandoned = false, true
		g.open = false
	}
	g.open = true
	g.push(Rebalance{
		Protocol: e.Protocol, Generation: e.Generation, StartedAt: e.At, InProgress: true,
		Cause: e.Cause.String(), Reason: e.Reason, MemberID: e.Member, InstanceID: e.InstanceID,
		MembersBefore: g.base, Members: e.Members, PartitionsMoved: -1,
		MemberEvents: g.quiet, MemberEventsDropped: g.quietDropped,
	}, opts.PerGroup)
	g.quiet, g.quietDropped = nil, 0
}

func (g *group) completed(e observe.GroupEvent, opts Options) {
	var r *Rebalance
	if g.open && g.newest().Protocol == e.Protocol {
		r = g.newest()
	} else {
		if g.open {
			g.newest().InProgress, g.newest().Abandoned = false, true
		}
		// A completion whose start the timeline did not see: it began
		// before the timeline started, or its shard reloaded.
		r = g.push(Rebalance{
			Protocol: e.Protocol, Cause: e.Cause.String(), MemberID: e.Member, InstanceID: e.InstanceID,
			MembersBefore: g.base, MemberEvents: g.quiet, MemberEventsDropped: g.quietDropped,
		}, opts.PerGroup)
		if e.Duration > 0 {
			r.StartedAt = e.At.Add(-e.Duration)
		}
		g.quiet, g.quietDropped = nil, 0
	}
	g.open = false
	r.InProgress = false
	r.Generation, r.CompletedAt, r.Members = e.Generation, e.At, e.Members
	r.Phases, r.PartitionsMoved = e.Phases, e.PartitionsMoved
	if e.Cause != observe.CauseUnknown {
		// The machine knew the start; otherwise (its shard reloaded
		// during the rebalance) what the timeline saw of the start stays.
		r.Cause, r.MemberID, r.InstanceID = e.Cause.String(), e.Member, e.InstanceID
	}
	switch {
	case e.Duration > 0 || e.Cause != observe.CauseUnknown:
		r.Duration = e.Duration
	case !r.StartedAt.IsZero():
		// Its start was seen here, before the shard reloaded: the
		// timeline knows how long it took, though not its phases.
		r.Duration = e.At.Sub(r.StartedAt)
	}
	g.base = e.Members
}

func (g *group) member(e observe.GroupEvent, opts Options) {
	m := MemberEvent{At: e.At, Kind: e.Kind.String(), MemberID: e.Member, InstanceID: e.InstanceID, Reason: e.Reason}
	events, dropped := &g.quiet, &g.quietDropped
	if g.open {
		r := g.newest()
		events, dropped = &r.MemberEvents, &r.MemberEventsDropped
	}
	if len(*events) < opts.MemberEvents {
		*events = append(*events, m)
	} else {
		*dropped++
	}
	if g.open {
		g.newest().Members = e.Members
	}
}

// Rebalances returns the group's rebalances, newest first: copies, which
// the caller may keep. Nil for a group the timeline does not know.
func (o *Observer) Rebalances(tenant, name string) []Rebalance {
	o.mu.Lock()
	defer o.mu.Unlock()
	el, ok := o.groups[Key{tenant, name}]
	if !ok {
		return nil
	}
	g := el.Value.(*group)
	out := make([]Rebalance, 0, len(g.past))
	for i := range len(g.past) {
		r := g.past[(g.head+len(g.past)-1-i)%len(g.past)]
		r.MemberEvents = append([]MemberEvent(nil), r.MemberEvents...)
		out = append(out, r)
	}
	return out
}

// Groups returns the groups the timeline knows, the most recently active
// first.
func (o *Observer) Groups() []Key {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Key, 0, len(o.groups))
	for el := o.lru.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*group).key)
	}
	return out
}
