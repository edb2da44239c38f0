package node

// The share groups' membership (the group coordinator's share groups,
// coordinator/groups/share) and their share-partition state (the share
// coordinator, sharecoord) are two machines on different shards, which
// cannot call each other. shareHooks carries what one owes the other, as
// an observer of the node's events:
//
//   - A share member that leaves, expires or is fenced (the group events
//     MemberLeft, MemberExpired, MemberFenced of protocol "share") gives
//     its records back at once: a sharestate.ReleaseCmd for every
//     partition of its group, rather than each lock running out (Kafka's
//     SharePartitionManager releases a departing member's records too).
//     Their delivery counts are kept (sharestate's rule).
//   - A deleted share group's share-partition state is dropped: the group
//     shard lists it (groups.ShareDeletionsCmd), each partition gets a
//     sharestate.DeleteCmd, and the group shard is told
//     (groups.ShareStateDeletedCmd), which makes those topics assignable
//     to a new group of the name again. This runs when the node starts,
//     after a DeleteGroups that deleted a share group (the event
//     GroupDeleted), whenever a group shard or a share-state shard loads
//     here (a crash between the deletion and the drop, a shard moved
//     here), and again after a back-off while something may still pass
//     (a timeout).
//
// The events come from the shard loops, which must never wait: a release
// is queued in a bounded queue (a full queue drops it, and its records
// come back when their locks expire, as they would without this), and a
// deletion only marks its group shard as due. A few goroutines of their
// own do the work.
//
// Cluster mode: the host sends the commands of share-state shards other
// nodes serve to them (sharecoord/remote.go, set once the node's Kafka
// server is up), so a release reaches every partition of the group and a
// deletion every partition's shard. A command a node could not take (it
// died; its shard moving) leaves the work to what comes next: the locks'
// expiry for a release, a later pass for a deletion (a shard loading on
// this node, or the back-off after a timeout).

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/ratelog"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The hooks' bounds: releases queued at most (each a few strings), the
// goroutines sending them, the deletions in flight at once, how long a
// command may take, and the back-off of a deletion pass that left work
// that may pass.
const (
	shareReleaseQueue     = 4096
	shareReleaseWorkers   = 4
	shareDeleteParallel   = 8
	shareCommandTimeout   = 30 * time.Second
	shareDeleteRetryFirst = time.Second
	shareDeleteRetryMax   = time.Minute
)

// shareHooks is the observer that carries a share group's membership
// changes to its share-partition state. It is in the node's observer list
// from the start; start hands it the two coordinators and starts its
// goroutines, stop ends them. Safe for concurrent use.
type shareHooks struct {
	observe.Nop
	logger *slog.Logger
	warn   *ratelog.Limiter

	releases chan sharestate.ReleaseCmd

	mu sync.Mutex
	// groups and share are set by start; nil before it and after stop.
	groups *coordinator.Coordinator
	share  *sharecoord.Host
	// due are the group shards whose deletions are to be looked at;
	// all: every shard held here.
	due  map[int]bool
	all  bool
	kick chan struct{} // a pass is due: cap 1

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newShareHooks(logger *slog.Logger) *shareHooks {
	return &shareHooks{
		logger:   logger,
		warn:     ratelog.New(logger, 10, 10*time.Second),
		releases: make(chan sharestate.ReleaseCmd, shareReleaseQueue),
		due:      map[int]bool{},
		kick:     make(chan struct{}, 1),
	}
}

// WantsRequests implements observe.RequestWanter: group and shard events
// only.
func (*shareHooks) WantsRequests() bool { return false }

// Group implements observe.Observer: a share member's departure is
// queued for release, a share group's deletion marks its group shard due.
func (h *shareHooks) Group(_ context.Context, e observe.GroupEvent) {
	if e.Protocol != "share" {
		return
	}
	switch e.Kind {
	case observe.MemberLeft, observe.MemberExpired, observe.MemberFenced:
		select {
		case h.releases <- sharestate.ReleaseCmd{Tenant: e.Tenant, Group: e.Group, Member: e.Member}:
		default:
			h.warn.Warn("share member's records not released at once: too many releases queued; they come back when their locks expire", "group", e.Group, "member", e.Member, "queued", shareReleaseQueue)
		}
	case observe.GroupDeleted:
		h.mu.Lock()
		if h.groups != nil {
			h.due[h.groups.ShardFor(e.Tenant, e.Group)] = true
		} else {
			h.all = true
		}
		h.mu.Unlock()
		h.poke()
	}
}

// Shard implements observe.Observer: a group shard loaded here may hold
// deletions left by a crash; a share-state shard loaded here may be what
// deletions left undone were waiting for.
func (h *shareHooks) Shard(e observe.ShardEvent) {
	if e.Kind != observe.ShardLoaded || e.Err != nil {
		return
	}
	h.mu.Lock()
	switch {
	case e.Shard < record.AssignerShard:
		h.due[int(e.Shard)] = true
	case e.Shard >= record.ShareStateShardBase && e.Shard < record.GlobalShard:
		h.all = true
	default:
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	h.poke()
}

func (h *shareHooks) poke() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// start hands the hooks the coordinators and starts their goroutines,
// with a deletion pass over every group shard held here.
func (h *shareHooks) start(gc *coordinator.Coordinator, share *sharecoord.Host) {
	ctx, cancel := context.WithCancel(context.Background())
	h.mu.Lock()
	h.groups, h.share, h.cancel, h.all = gc, share, cancel, true
	h.mu.Unlock()
	for range shareReleaseWorkers {
		h.wg.Go(func() { h.releaseLoop(ctx) })
	}
	h.wg.Go(func() { h.deleteLoop(ctx) })
	h.poke()
}

// stop ends the goroutines (a command under way is abandoned: a release
// then comes back at its locks' expiry, a deletion at the next start) and
// waits for them. Events after it are dropped.
func (h *shareHooks) stop() {
	h.mu.Lock()
	cancel := h.cancel
	h.groups, h.share, h.cancel = nil, nil, nil
	h.mu.Unlock()
	if cancel != nil {
		cancel()
		h.wg.Wait()
	}
	h.warn.Close()
}

// hosts returns the coordinators, nil after stop.
func (h *shareHooks) hosts() (*coordinator.Coordinator, *sharecoord.Host) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.groups, h.share
}

// releaseLoop sends the queued releases.
func (h *shareHooks) releaseLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case cmd := <-h.releases:
			_, share := h.hosts()
			if share == nil {
				return
			}
			cctx, cancel := context.WithTimeout(ctx, shareCommandTimeout)
			r := share.Release(cctx, cmd)
			cancel()
			if r.Code != 0 && ctx.Err() == nil {
				h.logger.Debug("share member's records not released; they come back when their locks expire", "group", cmd.Group, "member", cmd.Member, "err", kerr.ErrorForCode(r.Code))
			}
		}
	}
}

// deleteLoop runs a deletion pass whenever one is due, and again after a
// back-off while a pass leaves work that may pass.
func (h *shareHooks) deleteLoop(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	backoff := shareDeleteRetryFirst
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.kick:
		case <-retry.C:
		}
		gc, share := h.hosts()
		if gc == nil {
			return
		}
		h.mu.Lock()
		due := h.due
		if h.all {
			for _, i := range gc.Held() {
				due[i] = true
			}
		}
		h.due, h.all = map[int]bool{}, false
		h.mu.Unlock()
		again := false
		for i := range due { // each shard on its own: the order is no output
			if h.dropDeleted(ctx, gc, share, i) {
				again = true
				h.mu.Lock()
				h.due[i] = true
				h.mu.Unlock()
			}
		}
		if ctx.Err() != nil {
			return
		}
		if again {
			retry.Reset(backoff)
			backoff = min(2*backoff, shareDeleteRetryMax)
		} else {
			backoff = shareDeleteRetryFirst
		}
	}
}

// dropDeleted drops the share-partition state group shard i's deleted
// share groups left, and tells the shard. It reports whether a pass
// should be tried again after a back-off: some command timed out or
// failed otherwise than by a shard not served or loading here (whose
// load is an event that makes a pass due).
func (h *shareHooks) dropDeleted(ctx context.Context, gc *coordinator.Coordinator, share *sharecoord.Host, i int) (again bool) {
	cctx, cancel := context.WithTimeout(ctx, shareCommandTimeout)
	ds, code, err := gc.ShareDeletions(cctx, i)
	cancel()
	if err != nil || code != 0 {
		return mayPass(code, err)
	}
	for _, d := range ds {
		var mu sync.Mutex
		var done [][16]byte
		sem := make(chan struct{}, shareDeleteParallel)
		var wg sync.WaitGroup
		for _, t := range d.Topics {
			wg.Go(func() {
				ok := true
				for _, p := range t.Partitions {
					sem <- struct{}{}
					cctx, cancel := context.WithTimeout(ctx, shareCommandTimeout)
					r := share.Delete(cctx, sharestate.DeleteCmd{Key: sharestate.Key{Tenant: d.Tenant, Group: d.Group, TopicID: t.TopicID, Partition: p}})
					cancel()
					<-sem
					// GROUP_ID_NOT_FOUND: no state, nothing to drop.
					if r.Code != 0 && r.Code != kerr.GroupIDNotFound.Code {
						ok = false
						mu.Lock()
						again = again || mayPass(r.Code, nil)
						mu.Unlock()
						break
					}
				}
				if ok {
					mu.Lock()
					done = append(done, t.TopicID)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(done) == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, shareCommandTimeout)
		code, err := gc.ShareStateDeleted(cctx, d.Tenant, d.Group, done)
		cancel()
		if err != nil || code != 0 {
			again = again || mayPass(code, err)
			continue
		}
		h.logger.Info("deleted share group's state dropped", "group", d.Group, "tenant", d.Tenant, "topics", len(done))
	}
	return again
}

// mayPass reports whether a command's failure may pass by itself, so that
// trying again later makes sense: not a shard served elsewhere or still
// loading (its load here is an event that makes a pass due), nor the
// hooks stopping.
func mayPass(code int16, err error) bool {
	switch {
	case errors.Is(err, context.Canceled):
		return false
	case err != nil:
		return true
	}
	return code != kerr.NotCoordinator.Code && code != kerr.CoordinatorLoadInProgress.Code
}
