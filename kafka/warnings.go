package kafka

import (
	"log/slog"
	"sync"
	"time"
)

// warnLimiter logs repeated warnings of one kind (a bad frame, a refused
// connection, a failed accept) at most burst times per interval, then
// counts the rest and logs one line saying how many it left out. One
// misbehaving client can cause such a warning per connection, thousands a
// second; unlimited, they would fill the disk. Kafka logs these at INFO or
// WARN with no limit; its log4j appenders roll and delete old files, which
// a process writing to stderr cannot count on.
//
// A kind is the warning's message, so every call site with its own
// message is its own kind and the table stays as small as the code.
type warnLimiter struct {
	logger   *slog.Logger
	burst    int
	interval time.Duration

	mu     sync.Mutex
	kinds  map[string]*warnWindow
	closed bool
}

// warnWindow is one kind's current interval.
type warnWindow struct {
	start      time.Time
	logged     int
	suppressed int
	// timer logs the suppressed count when the interval ends, so that the
	// count is not held back until the next warning of the kind.
	timer *time.Timer
}

func newWarnLimiter(logger *slog.Logger, burst int, interval time.Duration) *warnLimiter {
	return &warnLimiter{logger: logger, burst: burst, interval: interval, kinds: map[string]*warnWindow{}}
}

// Warn logs msg with args at WARN level unless burst lines of msg have
// been logged in the current interval.
func (w *warnLimiter) Warn(msg string, args ...any) {
	now := time.Now()
	w.mu.Lock()
	k := w.kinds[msg]
	if k == nil {
		k = &warnWindow{start: now}
		w.kinds[msg] = k
	}
	var summary int
	if now.Sub(k.start) >= w.interval {
		summary = w.endWindowLocked(k)
		k.start = now
	}
	if k.logged < w.burst {
		k.logged++
		w.mu.Unlock()
		w.logSuppressed(msg, summary)
		w.logger.Warn(msg, args...)
		return
	}
	k.suppressed++
	if k.timer == nil && !w.closed {
		k.timer = time.AfterFunc(k.start.Add(w.interval).Sub(now), func() { w.flush(msg) })
	}
	w.mu.Unlock()
	w.logSuppressed(msg, summary)
}

// endWindowLocked closes k's interval and returns how many lines it
// suppressed, for the caller to log after unlocking.
func (w *warnLimiter) endWindowLocked(k *warnWindow) int {
	n := k.suppressed
	k.logged, k.suppressed = 0, 0
	if k.timer != nil {
		k.timer.Stop()
		k.timer = nil
	}
	return n
}

// flush ends msg's interval if it is over (its timer fired).
func (w *warnLimiter) flush(msg string) {
	w.mu.Lock()
	k := w.kinds[msg]
	var n int
	if k != nil && k.timer != nil {
		n = w.endWindowLocked(k)
		k.start = time.Now()
	}
	w.mu.Unlock()
	w.logSuppressed(msg, n)
}

func (w *warnLimiter) logSuppressed(msg string, n int) {
	if n > 0 {
		w.logger.Warn("repeated warning suppressed", "warning", msg, "suppressed", n, "interval", w.interval)
	}
}

// Close logs every pending suppressed count and stops the timers; later
// warnings are still limited, and their counts are logged by the next
// warning of their kind only.
func (w *warnLimiter) Close() {
	w.mu.Lock()
	w.closed = true
	counts := map[string]int{}
	for msg, k := range w.kinds {
		if n := w.endWindowLocked(k); n > 0 {
			counts[msg] = n
		}
	}
	w.mu.Unlock()
	for msg, n := range counts {
		w.logSuppressed(msg, n)
	}
}
