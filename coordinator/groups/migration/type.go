// Package migration is the online migration of a group between the
// classic protocol and the consumer protocol (KIP-848), as Apache Kafka 4
// serves a rolling upgrade: the conversions both ways (migration.go) and
// the classic members inside a consumer group, whose JoinGroup,
// SyncGroup, Heartbeat and LeaveGroup it serves with the consumer
// group's steps (classic.go). docs/kafka-mixed-groups.md is the
// reference; its section numbers are cited as "mixed §N".
//
// It is the one group package that knows both classic.Group and
// consumer.Group, through their exported fields and methods; the shard
// routes to it, and the consumer type asks it through consumer.Migration.
// Like the shard, it is pure: it must not do I/O, read a clock, log,
// start goroutines or take locks; it must not import package groups.
package migration

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Type is the migration between the group types of one shard.
type Type struct {
	h        *grouptype.Host
	cfg      *grouptype.Config
	classic  *classic.Type
	consumer *consumer.Type
}

var _ consumer.Migration = (*Type)(nil)

// New returns the migration of the shard whose host h is, between its
// classic type cl and the consumer type it makes, which asks it about
// conversions (consumer.Migration).
func New(h *grouptype.Host, cl *classic.Type) *Type {
	t := &Type{h: h, cfg: &h.Cfg, classic: cl}
	t.consumer = consumer.New(h, t)
	return t
}

// Consumer is the consumer type the migration converts to and from.
func (s *Type) Consumer() *consumer.Type { return s.consumer }

func (s *Type) emit(key, value []byte)                         { s.h.Emit(key, value) }
func (s *Type) timer(key string, at time.Time)                 { s.h.Timer(key, at) }
func (s *Type) reply(to machine.RequestID, resp kmsg.Response) { s.h.Reply(to, resp) }
func (s *Type) report(e observe.GroupEvent)                    { s.h.Report(e) }
func (s *Type) key(k grouptype.Key) record.GroupKey            { return s.h.GroupKey(k) }

// group returns the consumer part of a group, or nil.
func (s *Type) group(tenant, name string) *consumer.Group {
	return consumer.Of(s.h.Lookup(tenant, name))
}
