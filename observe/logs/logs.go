// Package logs is the observer that writes Cohort's events to a slog
// logger, so that an operator running `cohort serve` sees why a group
// rebalanced: every rebalance start and completion and every member
// expiry or fencing and every group deleted at INFO, a cluster's nodes
// joining, lost, rejoining, draining, and this node suspended and resumed
// at INFO, members joining and leaving and shards
// loading at DEBUG, and each request's outcome at DEBUG. Lines of one kind
// are rate-limited (observe/ratelog), so that a misbehaving client or a
// flapping group cannot flood the log.
//
// It must not block: it only formats and hands lines to the logger.
package logs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/ratelog"
	"github.com/cohort-dev/cohort/store"
)

// Options tune the limits; zero values take the defaults.
type Options struct {
	// Burst lines of one kind are logged per Interval; the rest are
	// counted and reported in one line. Defaults 100 per 10 s.
	Burst    int
	Interval time.Duration
}

// Observer logs events. Create it with New.
type Observer struct {
	observe.Nop
	logger *slog.Logger
	limit  *ratelog.Limiter
	debug  bool // request outcomes are wanted
}

// New returns an observer that logs to logger.
func New(logger *slog.Logger, opts Options) *Observer {
	if opts.Burst <= 0 {
		opts.Burst = 100
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	return &Observer{
		logger: logger,
		limit:  ratelog.New(logger, opts.Burst, opts.Interval),
		debug:  logger.Enabled(context.Background(), slog.LevelDebug),
	}
}

// Close logs the suppressed counts still pending and stops the limiter's
// timers.
func (o *Observer) Close() { o.limit.Close() }

// WantsRequests is true only when the logger prints DEBUG: otherwise the
// wire server need not report requests to this observer at all.
func (o *Observer) WantsRequests() bool { return o.debug }

// RequestAnswered logs the request's outcome at DEBUG.
func (o *Observer) RequestAnswered(_ context.Context, r observe.Request, a observe.Answer) {
	if !o.debug {
		return
	}
	o.limit.Log(slog.LevelDebug, "request", "api", r.API(), "version", r.Version, "client_id", r.ClientID,
		"host", r.Host, "bytes", r.Size, "latency", a.Latency, "error_code", a.ErrorCode(), "answered", a.Resp != nil)
}

// Group logs a group event: rebalances, expiries, conversions and deletions at INFO, the rest at
// DEBUG. A rebalance's lines say its cause and the member that caused it;
// a completion's also how long it took, its phases (classic: join, sync;
// consumer: assignment, revocation, reconciliation) and how many
// partitions moved (-1: not known).
func (o *Observer) Group(_ context.Context, e observe.GroupEvent) {
	level := slog.LevelDebug
	var msg string
	switch e.Kind {
	case observe.RebalanceStarted:
		level, msg = slog.LevelInfo, "rebalance started"
	case observe.RebalanceCompleted:
		level, msg = slog.LevelInfo, "rebalance completed"
	case observe.MemberExpired:
		level, msg = slog.LevelInfo, "member expired"
	case observe.MemberFenced:
		level, msg = slog.LevelInfo, "member fenced"
	case observe.GroupConverted:
		level, msg = slog.LevelInfo, "group converted"
	case observe.GroupDeleted:
		level, msg = slog.LevelInfo, "group deleted"
	case observe.MemberJoined:
		msg = "member joined"
	case observe.MemberLeft:
		msg = "member left"
	default:
		msg = "group event"
	}
	if !o.logger.Enabled(context.Background(), level) {
		return // a member joining at INFO: nothing to build
	}
	args := []any{"group", e.Group, "type", e.Protocol, "generation", e.Generation, "members", e.Members}
	rebalance := e.Kind == observe.RebalanceStarted || e.Kind == observe.RebalanceCompleted
	if rebalance {
		args = append(args, "cause", e.Cause.String())
	}
	if e.Tenant != "" {
		args = append(args, "tenant", e.Tenant)
	}
	if e.Member != "" {
		args = append(args, "member", e.Member)
	}
	if e.InstanceID != "" {
		args = append(args, "instance_id", e.InstanceID)
	}
	if e.Reason != "" {
		args = append(args, "reason", e.Reason)
	}
	if e.Kind == observe.RebalanceCompleted {
		args = append(args, "took", e.Duration, "partitions_moved", e.PartitionsMoved)
		if e.Protocol == "consumer" {
			args = append(args, "assignment", e.Phases.Assignment, "revocation", e.Phases.Revocation, "reconciliation", e.Phases.Sync)
		} else {
			args = append(args, "join", e.Phases.Join, "sync", e.Phases.Sync)
		}
	}
	o.limit.Log(level, msg, args...)
}

// Shard logs shard events: a load at DEBUG (failed or not), an
// unload at WARN unless it was asked for.
func (o *Observer) Shard(e observe.ShardEvent) {
	switch e.Kind {
	case observe.ShardLoaded:
		if e.Err != nil {
			// DEBUG: a first load that fails is the start-up error, said once by
			// whoever started it; a reload that fails is warned of by the shard
			// set with its back-off.
			o.limit.Log(slog.LevelDebug, "shard load failed", "shard", e.Shard, "err", e.Err)
			return
		}
		o.limit.Log(slog.LevelDebug, "shard loaded", "shard", e.Shard, "records", e.Records, "took", e.Took)
	case observe.ShardUnloaded:
		level := slog.LevelWarn
		switch {
		case e.Reason == observe.ReasonUnloaded:
			level = slog.LevelDebug
		case e.Reason == observe.ReasonFenced:
			level = slog.LevelInfo // see BatchWritten
		}
		o.limit.Log(level, "shard unloaded", "shard", e.Shard, "reason", e.Reason)
	}
}

// Cluster logs a cluster event at INFO: "cluster node lost" node=3 ...,
// with the counts of nodes serving, draining and suspended after it.
func (o *Observer) Cluster(e observe.ClusterEvent) {
	args := []any{"node", e.Node}
	if e.Kafka != "" {
		args = append(args, "kafka", e.Kafka)
	}
	if e.Self {
		args = append(args, "self", true)
	}
	if e.Reason != "" {
		args = append(args, "reason", e.Reason)
	}
	args = append(args, "serving", e.Serving, "draining", e.Draining, "suspended", e.Suspended)
	o.limit.Log(slog.LevelInfo, "cluster node "+e.Kind.String(), args...)
}

// BatchWritten logs a failed store write at WARN, and one fenced by
// another owner of the shard at INFO: a fence is how a shard moves when
// its last owner still writes, on a planned move whose end that owner
// has not seen yet (every cluster's start moves shards so) or after its
// lease lapsed, which the node warns of itself ("cannot renew the lease
// in time"). Either way the node does what it should, and gives the
// shard up, as Kafka's coordinator logs unloading a partition it no
// longer leads at INFO.
func (o *Observer) BatchWritten(b observe.Batch) {
	switch {
	case b.Err == nil:
	case errors.Is(b.Err, store.ErrFenced):
		o.limit.Log(slog.LevelInfo, "store write fenced: another node has the shard", "shard", b.Shard, "records", b.Records)
	default:
		o.limit.Log(slog.LevelWarn, "store write failed", "shard", b.Shard, "records", b.Records, "err", b.Err)
	}
}

var (
	_ observe.Observer        = (*Observer)(nil)
	_ observe.ClusterObserver = (*Observer)(nil)
)
