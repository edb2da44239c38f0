// Package classic is the classic group protocol of a group-coordinator
// shard, as Apache Kafka's ClassicGroup and the classic half of its
// GroupMetadataManager: JoinGroup, SyncGroup, Heartbeat and LeaveGroup
// (the join barrier, rebalances, static members, KIP-345), the simple
// groups that only commit offsets, the classic group record, and what
// only a classic group can say about its offsets (commit validation,
// retention, deletion). docs/kafka-classic-groups.md is the reference;
// its section numbers (§) are cited in comments.
//
// Files: classic.go, the group, its record and replay; join.go,
// JoinGroup and the join phase; sync.go, SyncGroup; heartbeat.go,
// Heartbeat and LeaveGroup; events.go, the group events; admin.go,
// describe, delete, retention and offset validation.
//
// The shard (package groups) routes a request here once it knows the
// group is classic (or does not exist); the migration to and from the
// consumer protocol (package migration) reaches the group through its
// exported fields and methods. Like the shard, it is pure: it must not do
// I/O, read a clock, log, start goroutines or take locks; it must not
// import package groups, consumer or migration.
package classic

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Type is the classic group type of one shard: its rules over the
// classic groups in the shard's registry.
type Type struct {
	h   *grouptype.Host
	cfg *grouptype.Config
}

// New returns the classic type of the shard whose host h is.
func New(h *grouptype.Host) *Type { return &Type{h: h, cfg: &h.Cfg} }

func (s *Type) emit(key, value []byte)                         { s.h.Emit(key, value) }
func (s *Type) timer(key string, at time.Time)                 { s.h.Timer(key, at) }
func (s *Type) reply(to machine.RequestID, resp kmsg.Response) { s.h.Reply(to, resp) }
func (s *Type) report(e observe.GroupEvent)                    { s.h.Report(e) }
func (s *Type) key(k grouptype.Key) record.GroupKey            { return s.h.GroupKey(k) }
