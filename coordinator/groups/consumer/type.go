// Package consumer is the consumer group protocol of a group-coordinator
// shard (KIP-848), as Apache Kafka's ConsumerGroup and the consumer half
// of its GroupMetadataManager: the five consumer-group records and their
// replay, ConsumerGroupHeartbeat (join, heartbeat, leave; the group epoch,
// the target assignment computed by the server assignors, each member's
// reconciliation toward it), ConsumerGroupDescribe, the group events, and
// what only a consumer group can say about its offsets (commit and fetch
// validation, retention).
//
// Files: consumer.go, the group, its members, records and replay;
// heartbeat.go, ConsumerGroupHeartbeat and the member timers;
// reconcile.go, a member's next assignment (Kafka's
// CurrentAssignmentBuilder); events.go, the group events; admin.go,
// describe and retention.
//
// A member may speak the classic protocol (a mixed group: its record
// carries ClassicMeta); serving its JoinGroup, SyncGroup, Heartbeat and
// LeaveGroup, and converting a group between the protocols, is package
// migration's, which this package asks through Migration. It is pure
// like the shard: it must not do I/O, read a clock, log, start goroutines
// or take locks; it must not import package groups, classic or migration.
package consumer

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Type is the consumer group type of one shard: its rules over the
// consumer groups in the shard's registry.
type Type struct {
	h   *grouptype.Host
	cfg *grouptype.Config
	mig Migration
}

// Migration is what the consumer type asks of the migration between the
// protocols (package migration; the shard wires it).
type Migration interface {
	// Join answers a ConsumerGroupHeartbeat to e, a group of another
	// type: the consumer group it becomes, or why it cannot.
	Join(now time.Time, e *grouptype.Entry, r *kmsg.ConsumerGroupHeartbeatRequest) (*Group, int16, string)
	// Leave is asked before consumer-protocol member m of g leaves or
	// is fenced (reported as kind, for reason; the rebalance it starts
	// for t and why): if the group converts back to a classic group
	// without m, it does so and reports true, and the removal is done.
	Leave(now time.Time, g *Group, m *Member, kind observe.GroupEventKind, reason string, t grouptype.Trigger, why string) bool
}

// New returns the consumer type of the shard whose host h is, asking mig
// about conversions.
func New(h *grouptype.Host, mig Migration) *Type { return &Type{h: h, cfg: &h.Cfg, mig: mig} }

func (s *Type) emit(key, value []byte)                         { s.h.Emit(key, value) }
func (s *Type) timer(key string, at time.Time)                 { s.h.Timer(key, at) }
func (s *Type) reply(to machine.RequestID, resp kmsg.Response) { s.h.Reply(to, resp) }
func (s *Type) report(e observe.GroupEvent)                    { s.h.Report(e) }
func (s *Type) key(k grouptype.Key) record.GroupKey            { return s.h.GroupKey(k) }
func (s *Type) catalog(tenant string) *machine.Catalog         { return s.h.Catalog(tenant) }
func (s *Type) entry(k grouptype.Key) *grouptype.Entry         { return s.h.Register(k) }
func (s *Type) forget(g *grouptype.Entry)                      { s.h.Forget(g) }

// Of returns the consumer part of a group, or nil.
func Of(g *grouptype.Entry) *Group {
	if g == nil {
		return nil
	}
	c, _ := g.Part.(*Group)
	return c
}

// group returns the consumer part of a group, or nil.
func (s *Type) group(tenant, name string) *Group { return Of(s.h.Lookup(tenant, name)) }
