package grouptype

// The shard's configuration, which every group type reads (groups.Config
// is this type), and the migration policy it carries.

import (
	"fmt"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/assign"
)

// Config configures a shard. All fields are required (the coordinator
// fills Kafka's defaults).
type Config struct {
	Shard uint16
	// Seed seeds the generator of member and group ids.
	Seed [32]byte

	MinSessionTimeout, MaxSessionTimeout time.Duration
	MaxSize                              int
	// MaxPendingMembers caps the ids handed out with MEMBER_ID_REQUIRED
	// and not yet used, per group (0: no cap); see coordinator.Config.
	MaxPendingMembers int
	// InitialDelay and InitialQuiet: see coordinator.Config. Quiet is at
	// most Delay.
	InitialDelay, InitialQuiet time.Duration
	// InitialAdaptive closes the initial barrier after a few times the
	// observed gap between arrivals instead of the whole quiet window
	// (package classic, initialWait); see coordinator.Config.
	InitialAdaptive           bool
	OffsetMetadataMaxBytes    int
	Retention, RetentionCheck time.Duration

	// KIP-848 consumer groups: the session timeout and heartbeat interval
	// the coordinator gives members, the least time between two target
	// assignment computations, the most members (0: no limit), and the
	// server assignors (the first is the default).
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	AssignmentInterval        time.Duration
	ConsumerMaxSize           int
	Assignors                 []assign.Assignor
	// MigrationPolicy: which online conversions of a group with members
	// are allowed (package migration); "" is bidirectional.
	MigrationPolicy MigrationPolicy

	// KIP-932 share groups (package share): the session timeout and
	// heartbeat interval the coordinator gives members when the group's
	// configs set none (Kafka's group.share.session.timeout.ms, 45 s,
	// and group.share.heartbeat.interval.ms, 5 s), and the most members
	// of a share group (group.share.max.size, 200). Zero is Kafka's
	// default.
	ShareSessionTimeout, ShareHeartbeatInterval time.Duration
	ShareMaxSize                                int

	// Limits, if set, gives each tenant's limits (its organisation's
	// quotas, grouptype's limits.go). It is configuration, consulted only for new
	// requests, never on replay. Nil: no per-tenant limits.
	Limits func(tenant string) TenantLimits
	// Counts, if set, is the count of each tenant's groups shared with
	// the coordinator's other shards, for TenantLimits.MaxGroups. Nil:
	// this shard's groups only. The shard publishes to it from Loaded
	// on: a machine that is only replayed (a load under way, or the
	// runtime's invariant check rebuilding one) publishes nothing.
	Counts GroupCounter
	// OffsetsTopicBlock is how far ahead of its records the shard
	// reserves offsets of its __consumer_offsets partition
	// (offsetstopic.ReserveBlock; reserve.go). 0: the coordinator does
	// not serve the topic, and the shard writes no reservation.
	OffsetsTopicBlock int64
}

// MigrationPolicy is Kafka's group.consumer.migration.policy: which
// online conversions of a group that has members are allowed. Empty
// groups convert either way whatever the policy, and a classic member may
// always join a consumer group that has members (mixed §2).
type MigrationPolicy string

// The policies.
const (
	MigrateBidirectional MigrationPolicy = "bidirectional"
	MigrateUpgrade       MigrationPolicy = "upgrade"
	MigrateDowngrade     MigrationPolicy = "downgrade"
	MigrateDisabled      MigrationPolicy = "disabled"
)

// ParseMigrationPolicy parses a policy, case-insensitively as Kafka.
func ParseMigrationPolicy(s string) (MigrationPolicy, error) {
	switch p := MigrationPolicy(strings.ToLower(s)); p {
	case MigrateBidirectional, MigrateUpgrade, MigrateDowngrade, MigrateDisabled:
		return p, nil
	}
	return "", fmt.Errorf("group consumer migration policy %q: must be bidirectional, upgrade, downgrade or disabled", s)
}

func (p MigrationPolicy) Upgrades() bool {
	return p == "" || p == MigrateBidirectional || p == MigrateUpgrade
}

func (p MigrationPolicy) Downgrades() bool {
	return p == "" || p == MigrateBidirectional || p == MigrateDowngrade
}
