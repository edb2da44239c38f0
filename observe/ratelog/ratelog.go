// Package ratelog limits repeated log lines: one misbehaving client (or
// group) can cause a line per connection or per request, thousands a
// second, and unlimited they would fill the disk.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Limiter logs repeated lines of one kind (a bad frame, a refused
// connection, a failed accept, a rebalance) at most burst times per interval, then
// counts the rest and logs one line saying how many it left out. One
// misbehaving client can cause such a warning per connection, thousands a
// second; unlimited, they would fill the disk. Kafka logs these at INFO or
// WARN with no limit; its log4j appenders roll and delete old files, which
// a process writing to stderr cannot count on.
//
// A kind is the warning's message, so every call site with its own
// message is its own kind and the table stays as small as the code.
type Limiter struct {
	logger   *slog.Logger
	burst    int
	interval time.Duration

	mu     sync.Mutex
	kinds  map[string]*window
	closed bool
}

// window is one kind's current interval.
type window struct {
	level      slog.Level
	start      time.Time
	logged     int
	suppressed int
	// timer logs the suppressed count when the interval ends, so that the
	// count is not held back until the next warning of the kind.
	timer *time.Timer
}

func New(logger *slog.Logger, burst int, interval time.Duration) *Limiter {
	return &Limiter{logger: logger, burst: burst, interval: interval, kinds: map[string]*window{}}
}

// Warn logs msg with args at WARN level unless burst lines of msg have
// been logged in the current interval.
func (w *Limiter) Warn(msg string, args ...any) { w.Log(slog.LevelWarn, msg, args...) }

// Log logs msg with args at level unless burst lines of msg have been
// logged in the current interval. A line the logger would not print
// costs a level check and nothing else.
func (w *Limiter) Log(level slog.Level, msg string, args ...any) {
	if !w.logger.Enabled(context.Background(), level) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	k := w.kinds[msg]
	if k == nil {
		k = &window{start: now, level: level}
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
		w.logSuppressed(msg, level, summary)
		w.logger.Log(context.Background(), level, msg, args...)
		return
	}
	k.suppressed++
	if k.timer == nil && !w.closed {
		k.timer = time.AfterFunc(k.start.Add(w.interval).Sub(now), func() { w.flush(msg) })
	}
	w.mu.Unlock()
	w.logSuppressed(msg, level, summary)
}

// endWindowLocked closes k's interval and returns how many lines it
// suppressed, for the caller to log after unlocking.
func (w *Limiter) endWindowLocked(k *window) int {
	n := k.suppressed
	k.logged, k.suppressed = 0, 0
	if k.timer != nil {
		k.timer.Stop()
		k.timer = nil
	}
	return n
}

// flush ends msg's interval if it is over (its timer fired).
func (w *Limiter) flush(msg string) {
	w.mu.Lock()
	k := w.kinds[msg]
	var n int
	var level slog.Level
	if k != nil && k.timer != nil {
		n = w.endWindowLocked(k)
		k.start = time.Now()
		level = k.level
	}
	w.mu.Unlock()
	w.logSuppressed(msg, level, n)
}

func (w *Limiter) logSuppressed(msg string, level slog.Level, n int) {
	if n > 0 {
		w.logger.Log(context.Background(), level, "repeated warning suppressed", "warning", msg, "suppressed", n, "interval", w.interval)
	}
}

// Close logs every pending suppressed count and stops the timers; later
// warnings are still limited, and their counts are logged by the next
// warning of their kind only.
func (w *Limiter) Close() {
	w.mu.Lock()
	w.closed = true
	type count struct {
		level slog.Level
		n     int
	}
	counts := map[string]count{}
	for msg, k := range w.kinds {
		if n := w.endWindowLocked(k); n > 0 {
			counts[msg] = count{k.level, n}
		}
	}
	w.mu.Unlock()
	for msg, c := range counts {
		w.logSuppressed(msg, c.level, c.n)
	}
}
