package topics

// Retention, as Kafka's UnifiedLog.deleteOldSegments: a pass over the
// partitions deletes, oldest first, the whole segments a partition no
// longer keeps (never the active one), and rolling by segment.ms happens
// on append (rollDue). The pass runs every Config.RetentionCheckInterval
// (Kafka's log.retention.check.interval.ms) and when a topic's configs
// change.
//
// Crash safety: the new log start is stored (synced, renamed, directory
// synced) before any file goes, and recovery removes the segments wholly
// below the stored start, so a crash at any point of a pass leaves a
// log that opens at the new start or, before the store, at the old one
// with every file there. Reads hold the segment they read (refs): a
// removed segment's file is closed by the last read using it.

import (
	"errors"
	"os"
	"slices"
	"sort"
	"time"
)

// DefaultRetentionCheckInterval is Config.RetentionCheckInterval's
// default, Kafka's log.retention.check.interval.ms.
const DefaultRetentionCheckInterval = 5 * time.Minute

// rollDue reports whether seg has been the active segment for longer than
// segment.ms, as Kafka's LogSegment.shouldRoll decides it: in record time,
// the new batch's max timestamp ts against the first batch's, or, when
// the first batch has no timestamp, by the clock since the segment was
// created (or opened). Callers hold mu.
func (p *Partition) rollDue(seg *segment, ts int64) bool {
	if seg.firstTS >= 0 {
		return ts-seg.firstTS > p.cfg.segmentMs
	}
	return p.now().Sub(seg.created).Milliseconds() > p.cfg.segmentMs
}

// expired returns how many of the oldest segments the partition no
// longer keeps at time now (Unix ms), never the active one, as Kafka's
// deleteOldSegments: those wholly below the log start (DeleteRecords), and
// when cleanup.policy includes delete, those that retention.bytes lets go
// (while the partition stays at least that large without them) or that
// retention.ms does (their newest record older than that). The count is
// of a prefix: the first segment kept stops it. Callers hold mu.
func (p *Partition) expired(now int64) int {
	var size int64
	for _, s := range p.segs {
		size += s.size
	}
	n := 0
	for ; n < len(p.segs)-1; n++ {
		s, next := p.segs[n], p.segs[n+1]
		switch {
		case next.base <= p.logStart:
		case !p.cfg.deleteRetention:
			return n
		case p.cfg.retentionBytes >= 0 && size-s.size >= p.cfg.retentionBytes:
		case p.cfg.retentionMs >= 0 && now-p.largestTimestamp(s) > p.cfg.retentionMs:
		default:
			return n
		}
		size -= s.size
	}
	return n
}

// largestTimestamp is the newest record time in s, or, if its batches
// carry none, the file's modification time, as Kafka's
// LogSegment.largestTimestamp. Callers hold mu.
func (p *Partition) largestTimestamp(s *segment) int64 {
	if s.maxTS >= 0 {
		return s.maxTS
	}
	st, err := s.f.Stat()
	if err != nil {
		return s.created.UnixMilli()
	}
	return st.ModTime().UnixMilli()
}

// retain deletes the segments the partition no longer keeps at now
// (expired) and moves the log start to the first offset of the first
// segment left, if that is above it. It returns how many it deleted.
func (p *Partition) retain(now time.Time) (int, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, nil
	}
	n := p.expired(now.UnixMilli())
	if n == 0 {
		p.mu.Unlock()
		return 0, nil
	}
	if start := p.segs[n].base; start > p.logStart {
		// Durable before any file goes: see the top of this file.
		if err := p.storeLogStart(start); err != nil {
			p.mu.Unlock()
			return 0, err
		}
		p.logStart = start
	}
	gone := slices.Clone(p.segs[:n])
	p.segs = slices.Clone(p.segs[n:])
	first := p.segs[0].base
	i := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].base >= first })
	p.batches = slices.Clone(p.batches[i:])
	// An aborted transaction ending below the log start overlaps no read.
	i = sort.Search(len(p.aborted), func(i int) bool { return p.aborted[i].LastOffset >= p.logStart })
	p.aborted = slices.Clone(p.aborted[i:])
	for _, s := range gone {
		s.dead = true
		if s.refs == 0 {
			s.f.Close()
		}
	}
	start := p.logStart
	p.mu.Unlock()

	// Outside the lock: unlinking a large file takes a while. Nothing
	// else touches these names: new segments start at the log end, above.
	var errs []error
	for _, s := range gone {
		if err := os.Remove(p.segPath(s.base)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// Not needed for consistency (a removal a crash undoes is redone by
	// recover), but it makes the freed space stay freed.
	if err := syncDir(p.dir); err != nil && !p.isClosed() {
		errs = append(errs, err)
	}
	p.logger.Info("deleted log segments", "topic", p.Topic, "partition", p.Index,
		"segments", n, "first", gone[0].base, "log_start", start)
	return n, errors.Join(errs...)
}

// retainLoop runs a retention pass every interval and whenever kicked,
// until stop is closed. Its first timer is armed by Open (stopTimer), so
// that a test's fake clock moved right after Open fires it.
func (l *Log) retainLoop(stopTimer func() bool) {
	defer close(l.loopDone)
	for {
		select {
		case <-l.stopLoop:
			stopTimer()
			return
		case <-l.wake:
		}
		// Armed before the pass, so that a clock moved during the pass
		// fires the next one.
		stopTimer()
		stopTimer = l.clock.At(l.clock.Now().Add(l.retentionEvery), l.kick)
		l.retain()
	}
}

// kick asks the loop for a retention pass soon; it never blocks.
func (l *Log) kick() {
	select {
	case l.wake <- struct{}{}:
	default: // one is pending already
	}
}

// retain runs one retention pass over the partitions this node leads.
func (l *Log) retain() {
	now := l.clock.Now()
	for _, t := range l.Topics() {
		for _, p := range t.Partitions {
			select {
			case <-l.stopLoop:
				return
			default:
			}
			if p == nil {
				continue
			}
			if _, err := p.retain(now); err != nil {
				l.logger.Warn("deleting log segments", "topic", t.Name, "partition", p.Index, "err", err)
			}
		}
	}
}
