// Package share is the share group type of a group-coordinator shard
// (KIP-932), as Apache Kafka 4.2's ShareGroup and the share half of its
// GroupMetadataManager: the share group records and their replay,
// ShareGroupHeartbeat (join, heartbeat, leave; the group epoch, the
// target assignment computed by the simple assignor, handed to each
// member at once: share groups have no revocation step), session expiry,
// ShareGroupDescribe, the answers the shard's other APIs give about a
// share group (ListGroups, DeleteGroups), the group events, and the
// share-partition state a group may hold (Kafka's
// ShareGroupStatePartitionMetadata), which a deleted group leaves for the
// share-state host to drop.
//
// Files: type.go, the type; share.go, the group, its members, records and
// replay; heartbeat.go, ShareGroupHeartbeat, the target assignment and
// the session timers; admin.go, describe, delete, and what the shard's
// host asks (a member's assignment, the share-partition state to drop);
// events.go, the group events.
//
// A share group's id is its own: a classic or consumer group of the same
// id makes ShareGroupHeartbeat GROUP_ID_NOT_FOUND, and a share group makes
// their requests fail (the shard routes those, as Kafka answers them). A
// share group commits no offsets: its consumers' progress is the
// share-partition state (coordinator/sharestate).
//
// It is pure like the shard: it must not do I/O, read a clock, log, start
// goroutines or take locks; it must not import package groups, classic,
// consumer or migration.
package share

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's defaults for the share groups' configs that Config leaves zero:
// group.share.session.timeout.ms, group.share.heartbeat.interval.ms and
// group.share.max.size.
const (
	DefaultSessionTimeout    = 45 * time.Second
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultMaxSize           = 200
)

// Type is the share group type of one shard: its rules over the share
// groups in the shard's registry, and the share-partition state each
// group name may hold.
type Type struct {
	h   *grouptype.Host
	cfg *grouptype.Config
	// parts is each group name's ShareGroupPartitions record (durable):
	// kept by name, not on the group, because a deleted group's record
	// stays until the state it names is dropped.
	parts map[grouptype.Key]*Partitions
}

// New returns the share type of the shard whose host h is.
func New(h *grouptype.Host) *Type {
	return &Type{h: h, cfg: &h.Cfg, parts: map[grouptype.Key]*Partitions{}}
}

func (s *Type) emit(key, value []byte)                         { s.h.Emit(key, value) }
func (s *Type) timer(key string, at time.Time)                 { s.h.Timer(key, at) }
func (s *Type) reply(to machine.RequestID, resp kmsg.Response) { s.h.Reply(to, resp) }
func (s *Type) report(e observe.GroupEvent)                    { s.h.Report(e) }
func (s *Type) key(k grouptype.Key) record.GroupKey            { return s.h.GroupKey(k) }
func (s *Type) catalog(tenant string) *machine.Catalog         { return s.h.Catalog(tenant) }

// Of returns the share part of a group, or nil.
func Of(g *grouptype.Entry) *Group {
	if g == nil {
		return nil
	}
	c, _ := g.Part.(*Group)
	return c
}

// group returns the share part of a group, or nil.
func (s *Type) group(tenant, name string) *Group { return Of(s.h.Lookup(tenant, name)) }

func (s *Type) sessionTimeout() time.Duration {
	if s.cfg.ShareSessionTimeout > 0 {
		return s.cfg.ShareSessionTimeout
	}
	return DefaultSessionTimeout
}

func (s *Type) heartbeatInterval() time.Duration {
	if s.cfg.ShareHeartbeatInterval > 0 {
		return s.cfg.ShareHeartbeatInterval
	}
	return DefaultHeartbeatInterval
}

func (s *Type) maxSize() int {
	if s.cfg.ShareMaxSize > 0 {
		return s.cfg.ShareMaxSize
	}
	return DefaultMaxSize
}
