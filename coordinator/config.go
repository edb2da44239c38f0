package coordinator

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/record"
)

// Config configures the group coordinator. The zero value of every field
// takes Kafka's default; the defaults are Kafka's broker defaults so that
// clients see a broker they know.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound a JoinGroup's session
	// timeout (INVALID_SESSION_TIMEOUT outside). Defaults 6 s and 30 min
	// (group.min/max.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// TenantLimits, if set, gives each tenant's limits on its groups:
	// its organisation's max_groups and max_members_per_group quotas
	// (package quota). Consulted only when a request would create a
	// group or add a member, never on replay. The group count is over
	// the shards this node holds, exact within a shard and at most
	// max_groups + shards - 1 when several shards create a tenant's
	// groups at once (groups/limits.go). Nil: no per-tenant limits.
	TenantLimits func(tenant string) groups.TenantLimits
	// MaxSize caps the members of a classic group (GROUP_MAX_SIZE_REACHED).
	// Default 2^31-1 (group.max.size). Unlike Kafka, member ids handed out
	// with MEMBER_ID_REQUIRED and not yet used count towards it.
	MaxSize int
	// MaxPendingMembers caps the member ids a classic group has handed
	// out with MEMBER_ID_REQUIRED (KIP-394) that have not joined yet;
	// beyond it a JoinGroup without a member id gets
	// GROUP_MAX_SIZE_REACHED. Each lives for the session timeout, so
	// without a cap one connection can make millions. Kafka has no such
	// cap. Default 10,000; at least 1.
	MaxPendingMembers int
	// InitialRebalanceDelay is how long the first rebalance of an Empty
	// group waits for more members, extended while they keep arriving, up
	// to the rebalance timeout (group.initial.rebalance.delay.ms). Default
	// 3 s; a negative value means no delay.
	InitialRebalanceDelay time.Duration
	// InitialRebalanceQuiet closes that barrier early, once no new member
	// has arrived for this long. Zero means equal to the delay, which is
	// exactly Kafka's behaviour; e.g. 50 ms lets a fleet that starts
	// together form one generation in tens of milliseconds.
	InitialRebalanceQuiet time.Duration
	// InitialRebalanceAdaptive closes that barrier sooner still: once no
	// new member has arrived for four times the mean gap between the
	// arrivals so far (at least 1 ms), never later than the quiet window
	// and the delay allow. Off by default (Kafka's behaviour). A fleet
	// arriving at a steady rate is never cut in two.
	InitialRebalanceAdaptive bool
	// OffsetMetadataMaxBytes caps a committed offset's metadata
	// (OFFSET_METADATA_TOO_LARGE). Default 4096 (offset.metadata.max.bytes).
	OffsetMetadataMaxBytes int
	// OffsetsRetention is how long the offsets of an Empty group (or of a
	// simple group, from their commit) are kept. Default 7 days
	// (offsets.retention.minutes).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is how often expired offsets are
	// looked for. Default 10 min (offsets.retention.check.interval.ms).
	OffsetsRetentionCheckInterval time.Duration
	// Shards is the number of coordinator shards (event loops). It is
	// part of the data: every record's key names its shard, so it is
	// fixed when a data directory is created. Default 16.
	Shards int

	// __consumer_offsets (package offsetstopic).

	// NoOffsetsTopic turns the __consumer_offsets topic off: it is not
	// listed. Served, a partition holds a copy of its shard's records
	// (about 185 bytes per committed offset) only from a reader's
	// arrival until OffsetsTopicIdle after its last read.
	// Default false: served, as Kafka does.
	NoOffsetsTopic bool
	// OffsetsTopicTombstoneRetention is how long a deletion stays
	// readable in __consumer_offsets (Kafka's delete.retention.ms).
	// Default 24 h; at least 1 s.
	OffsetsTopicTombstoneRetention time.Duration
	// OffsetsTopicIdle is how long a partition of __consumer_offsets
	// keeps its shard's records in memory after its last read
	// (offsetstopic.Options.Idle); a partition no one reads holds none.
	// Default offsetstopic.DefaultIdle.
	OffsetsTopicIdle time.Duration

	// KIP-848 consumer groups.

	// ConsumerSessionTimeout fences a consumer group member that has not
	// heartbeaten for this long. Default 45 s
	// (group.consumer.session.timeout.ms).
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is the heartbeat interval given to
	// consumer group members. Default 5 s
	// (group.consumer.heartbeat.interval.ms).
	ConsumerHeartbeatInterval time.Duration
	// ConsumerAssignmentInterval is the least time between two target
	// assignment computations of a group. Default 1 s
	// (group.consumer.assignment.interval.ms); negative means none.
	ConsumerAssignmentInterval time.Duration
	// ConsumerMaxSize caps the members of a consumer group
	// (GROUP_MAX_SIZE_REACHED). Default 2^31-1 (group.consumer.max.size).
	ConsumerMaxSize int
	// ConsumerAssignors are the server assignors by name, the default
	// first. Default uniform, range (group.consumer.assignors).
	ConsumerAssignors []string
	// CustomAssignors are server assignors an embedding program provides,
	// as Kafka's group.consumer.assignors takes classes: a name in
	// ConsumerAssignors is looked up here first, then among assign.Names.
	// They are called from every shard's loop, so they must be safe for
	// concurrent use, and must be deterministic.
	CustomAssignors []assign.Assignor
	// MigrationPolicy says which online conversions of a group with
	// members between the classic and the consumer protocol are allowed
	// (Kafka's group.consumer.migration.policy). Default bidirectional.
	MigrationPolicy groups.MigrationPolicy

	// KIP-932 share groups.

	// ShareSessionTimeout fences a share group member that has not
	// heartbeaten for this long, in groups whose share.session.timeout.ms
	// is not set. Default 45 s (group.share.session.timeout.ms).
	ShareSessionTimeout time.Duration
	// ShareHeartbeatInterval is the heartbeat interval given to share
	// group members whose group sets no share.heartbeat.interval.ms.
	// Default 5 s (group.share.heartbeat.interval.ms); below the session
	// timeout.
	ShareHeartbeatInterval time.Duration
	// ShareMaxSize caps the members of a share group
	// (GROUP_MAX_SIZE_REACHED). Default 200 (group.share.max.size); at
	// least 1.
	ShareMaxSize int
}

// assignor resolves a ConsumerAssignors name.
func (c Config) assignor(name string) (assign.Assignor, bool) {
	for _, a := range c.CustomAssignors {
		if a.Name() == name {
			return a, true
		}
	}
	return assign.ByName(name)
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.MinSessionTimeout, 6*time.Second)
	def(&c.MaxSessionTimeout, 30*time.Minute)
	def(&c.InitialRebalanceDelay, 3*time.Second)
	def(&c.OffsetsRetention, 7*24*time.Hour)
	def(&c.OffsetsRetentionCheckInterval, 10*time.Minute)
	def(&c.OffsetsTopicTombstoneRetention, 24*time.Hour)
	if c.MaxSize == 0 {
		c.MaxSize = math.MaxInt32
	}
	if c.MaxPendingMembers == 0 {
		c.MaxPendingMembers = 10000
	}
	if c.OffsetMetadataMaxBytes == 0 {
		c.OffsetMetadataMaxBytes = 4096
	}
	if c.Shards == 0 {
		c.Shards = 16
	}
	def(&c.ConsumerSessionTimeout, 45*time.Second)
	def(&c.ConsumerHeartbeatInterval, 5*time.Second)
	def(&c.ConsumerAssignmentInterval, time.Second)
	if c.ConsumerAssignmentInterval < 0 {
		c.ConsumerAssignmentInterval = 0
	}
	if c.ConsumerMaxSize == 0 {
		c.ConsumerMaxSize = math.MaxInt32
	}
	def(&c.ShareSessionTimeout, share.DefaultSessionTimeout)
	def(&c.ShareHeartbeatInterval, share.DefaultHeartbeatInterval)
	if c.ShareMaxSize == 0 {
		c.ShareMaxSize = share.DefaultMaxSize
	}
	if c.MigrationPolicy == "" {
		c.MigrationPolicy = groups.MigrateBidirectional
	}
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = assign.Names()
	}
	if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.InitialRebalanceQuiet <= 0 || c.InitialRebalanceQuiet > c.InitialRebalanceDelay {
		c.InitialRebalanceQuiet = c.InitialRebalanceDelay
	}
	return c
}

// Validate reports a configuration no broker would start with. Call it on
// the result of WithDefaults.
func (c Config) Validate() error {
	var errs []error
	if c.MinSessionTimeout <= 0 || c.MaxSessionTimeout < c.MinSessionTimeout {
		errs = append(errs, fmt.Errorf("session timeouts: need 0 < min (%v) <= max (%v)", c.MinSessionTimeout, c.MaxSessionTimeout))
	}
	if c.MaxSessionTimeout > math.MaxInt32*time.Millisecond {
		errs = append(errs, fmt.Errorf("max session timeout %v is over 2^31-1 ms", c.MaxSessionTimeout))
	}
	if c.MaxSize < 1 {
		errs = append(errs, fmt.Errorf("group max size %d: must be at least 1", c.MaxSize))
	}
	if c.MaxPendingMembers < 1 {
		errs = append(errs, fmt.Errorf("group max pending members %d: must be at least 1", c.MaxPendingMembers))
	}
	if c.OffsetMetadataMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("offset metadata max bytes %d: must not be negative", c.OffsetMetadataMaxBytes))
	}
	if c.OffsetsRetention < time.Millisecond || c.OffsetsRetentionCheckInterval < time.Millisecond {
		errs = append(errs, errors.New("offsets retention and its check interval must be at least 1ms"))
	}
	if c.OffsetsTopicTombstoneRetention < time.Second {
		errs = append(errs, fmt.Errorf("offsets topic tombstone retention %v: must be at least 1s", c.OffsetsTopicTombstoneRetention))
	}
	if c.ConsumerSessionTimeout <= 0 || c.ConsumerHeartbeatInterval <= 0 || c.ConsumerHeartbeatInterval >= c.ConsumerSessionTimeout {
		errs = append(errs, fmt.Errorf("consumer heartbeat interval (%v) must be positive and below the session timeout (%v)", c.ConsumerHeartbeatInterval, c.ConsumerSessionTimeout))
	}
	if c.ConsumerMaxSize < 1 {
		errs = append(errs, fmt.Errorf("consumer group max size %d: must be at least 1", c.ConsumerMaxSize))
	}
	if c.ShareSessionTimeout <= 0 || c.ShareHeartbeatInterval <= 0 || c.ShareHeartbeatInterval >= c.ShareSessionTimeout {
		errs = append(errs, fmt.Errorf("share heartbeat interval (%v) must be positive and below the share session timeout (%v)", c.ShareHeartbeatInterval, c.ShareSessionTimeout))
	}
	if c.ShareSessionTimeout > math.MaxInt32*time.Millisecond {
		errs = append(errs, fmt.Errorf("share session timeout %v is over 2^31-1 ms", c.ShareSessionTimeout))
	}
	if c.ShareMaxSize < 1 {
		errs = append(errs, fmt.Errorf("share group max size %d: must be at least 1", c.ShareMaxSize))
	}
	if _, err := groups.ParseMigrationPolicy(string(c.MigrationPolicy)); err != nil {
		errs = append(errs, err)
	}
	for _, n := range c.ConsumerAssignors {
		if _, ok := c.assignor(n); !ok {
			errs = append(errs, fmt.Errorf("consumer assignor %q: not one of %v or the custom ones", n, assign.Names()))
		}
	}
	if c.Shards < 1 || c.Shards >= int(record.AssignerShard) {
		errs = append(errs, fmt.Errorf("shards %d: must be in [1, %d]", c.Shards, record.AssignerShard-1))
	}
	return errors.Join(errs...)
}
