package etcd

import (
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// revClock remembers when etcd revisions were observed, to answer "a
// revision that was current at least d ago": the bound for sweeping
// orphaned chunks and for compacting etcd's history. Samples are kept at
// least gap apart, and for horizon.
type revClock struct {
	mu      sync.Mutex
	gap     time.Duration
	horizon time.Duration
	samples []revSample // oldest first
}

type revSample struct {
	at  time.Time
	rev int64
}

func (c *revClock) init(gap, horizon time.Duration) {
	c.gap, c.horizon = gap, horizon
}

// observe records that rev was current now.
func (c *revClock) observe(rev int64) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.samples); n > 0 && (now.Sub(c.samples[n-1].at) < c.gap || rev <= c.samples[n-1].rev) {
		return
	}
	c.samples = append(c.samples, revSample{now, rev})
	// Keep one sample older than the horizon: the newest that old.
	i := 0
	for i+1 < len(c.samples) && now.Sub(c.samples[i+1].at) >= c.horizon {
		i++
	}
	c.samples = c.samples[i:]
}

// before returns the newest revision observed at or before t, or 0.
func (c *revClock) before(t time.Time) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rev int64
	for _, s := range c.samples {
		if s.at.After(t) {
			break
		}
		rev = s.rev
	}
	return rev
}

// housekeep runs until Close: every Options.CheckInterval it checks etcd's
// database size against its quota and, with Options.CompactHistory,
// compacts etcd's history.
func (s *Store) housekeep() {
	defer s.bg.Done()
	t := time.NewTicker(s.opts.CheckInterval)
	defer t.Stop()
	var compacted int64
	for {
		s.checkUsage()
		if s.opts.CompactHistory {
			compacted = s.compactHistory(compacted)
		}
		select {
		case <-s.bgCtx.Done():
			return
		case <-t.C:
		}
	}
}

// checkUsage asks every endpoint for its status and records the largest
// database size; above 80 % of the quota it logs a warning.
func (s *Store) checkUsage() {
	var used, quota int64
	var rev int64
	for _, ep := range s.cli.Endpoints() {
		c, cancel := s.reqCtx(s.bgCtx)
		st, err := s.cli.Status(c, ep)
		cancel()
		if err != nil {
			continue // an endpoint down says nothing about the size
		}
		used = max(used, st.DbSize)
		quota = max(quota, st.DbSizeQuota)
		rev = max(rev, st.Header.Revision)
	}
	if rev > 0 {
		s.clock.observe(rev)
	}
	if s.opts.QuotaBytes > 0 {
		quota = s.opts.QuotaBytes
	} else if quota <= 0 {
		quota = defaultQuota
	}
	s.used.Store(used)
	s.quota.Store(quota)
	if s.opts.OnUsage != nil {
		s.opts.OnUsage(used, quota)
	}
	if used*10 > quota*8 && s.opts.Logger != nil {
		s.opts.Logger.Warn("etcd store: etcd's database is over 80% of its quota; at 100% etcd refuses every write (NOSPACE): "+
			"compact and defragment etcd, or raise --quota-backend-bytes",
			"used_bytes", used, "quota_bytes", quota)
	}
}

// compactHistory compacts etcd's history at the newest revision observed at
// least Options.HistoryRetention ago, if newer than done (the last
// revision compacted), and returns the revision compacted to.
func (s *Store) compactHistory(done int64) int64 {
	rev := s.clock.before(time.Now().Add(-s.opts.HistoryRetention))
	if rev <= done {
		return done
	}
	c, cancel := s.reqCtx(s.bgCtx)
	defer cancel()
	_, err := s.cli.Compact(c, rev)
	switch {
	case err == nil, errors.Is(err, rpctypes.ErrCompacted): // another node did it
		return rev
	case s.opts.Logger != nil && s.bgCtx.Err() == nil:
		s.opts.Logger.Warn("etcd store: compaction of etcd's history failed", "revision", rev, "err", err)
	}
	return done
}
