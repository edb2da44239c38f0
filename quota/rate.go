package quota

import (
	"sync"
	"time"
)

// Window is how a Rate measures: Samples samples of Size each, as Kafka's
// quota.window.size.seconds (default 1 s) and quota.window.num (default
// 11).
type Window struct {
	Size    time.Duration
	Samples int
}

// DefaultWindow is Kafka's: 11 samples of 1 s.
var DefaultWindow = Window{Size: time.Second, Samples: 11}

// Max is the longest throttle a Rate asks for: the whole window. Kafka
// caps a request-time throttle at one sample and leaves byte-rate
// throttles unbounded; Cohort caps every one at the window it measured,
// so that one burst never mutes a connection for longer than it takes to
// leave the window.
func (w Window) Max() time.Duration { return w.Size * time.Duration(w.Samples) }

// Rate is Kafka's windowed rate (its metrics library's Rate over a
// SampledStat): values are added to the current sample; samples older
// than the window are forgotten; the rate is their sum over the time
// they cover, at least Samples-1 sample sizes, so that one burst after a
// quiet time is measured against the whole window, as Kafka's.
// It is safe for concurrent use.
type Rate struct {
	w       Window
	mu      sync.Mutex
	samples []sample // a ring of w.Samples
	cur     int
}

type sample struct {
	start time.Time
	v     float64
}

// NewRate returns a Rate measuring over w.
func NewRate(w Window) *Rate {
	if w.Size <= 0 || w.Samples < 2 {
		w = DefaultWindow
	}
	return &Rate{w: w, samples: make([]sample, w.Samples)}
}

// Record adds v at now and returns how long the caller must be throttled
// for the rate to come back to quota (0 if within it, or quota <= 0), by
// Kafka's rule: (rate - quota) / quota × the window measured, at most
// w.Max().
func (r *Rate) Record(now time.Time, v, quota float64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.samples[r.cur]
	if c.start.IsZero() || now.Sub(c.start) >= r.w.Size {
		r.cur = (r.cur + 1) % len(r.samples)
		c = &r.samples[r.cur]
		*c = sample{start: now}
	}
	c.v += v
	if quota <= 0 {
		return 0
	}
	// Forget samples that ended before the window began.
	total, oldest := 0.0, now
	for i := range r.samples {
		s := &r.samples[i]
		if s.start.IsZero() {
			continue
		}
		if now.Sub(s.start) >= r.w.Max() {
			*s = sample{}
			continue
		}
		total += s.v
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := max(now.Sub(oldest), r.w.Size*time.Duration(r.w.Samples-1))
	rate := total / elapsed.Seconds()
	if rate <= quota {
		return 0
	}
	t := time.Duration((rate - quota) / quota * float64(elapsed))
	return min(t, r.w.Max())
}
