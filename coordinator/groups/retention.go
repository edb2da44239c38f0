package groups

// Offset retention and the deletion of groups it leaves empty: Kafka's
// cleanupGroupMetadata (§14), run every RetentionCheck.

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
)

// sweep expires offsets, then deletes Empty groups left without offsets.
//
// It visits the groups that may have something to do, not every group
// (issue 34: a background job costs what changed): those touched since
// the last sweep (grouptype.Host.TakeUnswept: any change of a group comes
// through a lookup, which touches it), those left for a transaction's
// offsets last time, and those whose next expiry has come, found in an
// index of the groups by it (sweepIndex). Every group is visited when
// every group may have changed (after a load or a topic catalog's
// change), which builds the index again. The groups visited are swept in
// (tenant, name) order, as a sweep of every group would, so either writes
// the same records in the same order.
func (s *Shard) sweep(now time.Time) {
	unswept, all := s.h.TakeUnswept()
	var visit []*group
	if all || s.due.buckets == nil || s.due.fullOnly {
		visit = s.sortedGroups()
		for _, g := range visit {
			s.h.Swept(g)
			g.Due = 0
		}
		s.due.reset(s.cfg.RetentionCheck)
	} else {
		visit = append(append(unswept, s.due.pending...), s.due.take(now)...)
		visit = slices.DeleteFunc(visit, func(g *group) bool { return !s.h.Registered(g) })
		slices.SortFunc(visit, grouptype.CompareEntries)
		visit = slices.Compact(visit)
	}
	s.due.pending = nil
	s.due.visited = len(visit)
	for _, g := range visit {
		if s.offs.HasPending(g.Off()) {
			// As Kafka: not under a transaction's offsets; visited
			// again at the next sweep.
			s.due.pending = append(s.due.pending, g)
			continue
		}
		var at int64
		var ok bool
		switch p := g.Part.(type) {
		case *consumer.Group:
			at, ok = s.consumer.Sweep(p, now)
		case *classic.Group:
			at, ok = s.classic.Sweep(p, now)
		}
		if ok && s.h.Registered(g) {
			s.due.put(g, at)
		} else {
			g.Due = 0
		}
	}
	if s.due.entries > 2*s.h.Len()+1024 {
		s.due.compact()
	}
}

// nextExpiry is when a sweep would next expire one of g's offsets (Unix
// ms); ok is false if none would as g is (until it changes).
func (s *Shard) nextExpiry(g *group) (at int64, ok bool) {
	switch p := g.Part.(type) {
	case *consumer.Group:
		return s.consumer.NextExpiry(p)
	case *classic.Group:
		return s.classic.NextExpiry(p)
	}
	return 0, false
}

// sweepIndex is the shard's groups by when their next offset expires,
// in buckets of a RetentionCheck: a sweep takes the buckets come due.
// A group is in the bucket its Due tags; an entry of a group elsewhere
// (it was put in another bucket since) is left where it is, and passed
// over (compact drops them once they outnumber the groups).
type sweepIndex struct {
	width   int64              // a bucket's span, ms
	buckets map[int64][]*group // by expiry / width
	entries int                // in buckets, stale ones included
	pending []*group           // left for a transaction's offsets
	visited int                // by the last sweep (tests)
	// fullOnly makes every sweep visit every group (tests: the sweep
	// of every group, to compare with).
	fullOnly bool
}

func (x *sweepIndex) reset(width time.Duration) {
	x.width = max(1, width.Milliseconds())
	x.buckets, x.entries = map[int64][]*group{}, 0
}

// dueTag is bucket k's tag in a group's Due: never 0 (no bucket).
func dueTag(k int64) uint16 { return uint16(uint64(k)%65535) + 1 }

// put puts g in the bucket of expiry at, unless it is there.
func (x *sweepIndex) put(g *group, at int64) {
	k := at / x.width
	if t := dueTag(k); g.Due != t {
		g.Due = t
		x.buckets[k] = append(x.buckets[k], g)
		x.entries++
	}
}

// take removes the buckets whose span began by now and returns their
// groups (those still tagged with them; their tags cleared).
func (x *sweepIndex) take(now time.Time) []*group {
	var out []*group
	due := now.UnixMilli() / x.width
	for k, gs := range x.buckets {
		if k > due {
			continue
		}
		t := dueTag(k)
		for _, g := range gs {
			if g.Due == t {
				g.Due = 0
				out = append(out, g)
			}
		}
		x.entries -= len(gs)
		delete(x.buckets, k)
	}
	return out
}

// compact drops the entries of groups tagged with another bucket.
func (x *sweepIndex) compact() {
	x.entries = 0
	for k, gs := range x.buckets {
		t := dueTag(k)
		gs = slices.DeleteFunc(gs, func(g *group) bool { return g.Due != t })
		if len(gs) == 0 {
			delete(x.buckets, k)
			continue
		}
		x.buckets[k] = slices.Clip(gs)
		x.entries += len(gs)
	}
}

// checkDue reports a group the sweep's index would miss: one not touched
// since the last sweep, nor left for a transaction, whose next expiry is
// not in the bucket its Due tags, or not tagged. (Check, under every
// test.)
func (s *Shard) checkDue() error {
	x := &s.due
	if x.buckets == nil {
		return nil
	}
	in := map[*group]int64{}
	for k, gs := range x.buckets {
		for _, g := range gs {
			if g.Due == dueTag(k) {
				in[g] = k
			}
		}
	}
	for _, g := range s.sortedGroups() {
		if s.h.Unswept(g) || slices.Contains(x.pending, g) {
			continue
		}
		at, ok := s.nextExpiry(g)
		if !ok {
			continue
		}
		if k, found := in[g]; !found || k != at/x.width {
			return fmt.Errorf("group %q/%q expires at %d, not in the sweep's bucket %d (in %d, %v)", g.Tenant, g.Name, at, at/x.width, k, found)
		}
	}
	return nil
}
