package testkit

import (
	"sync"
	"time"
)

// FakeClock is a clock that moves only when a test advances it. It
// satisfies coordinator.Clock. Callbacks of timers that come due run
// synchronously inside Advance, in deadline order.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at   time.Time
	f    func()
	done bool
}

// NewFakeClock returns a clock at start.
func NewFakeClock(start time.Time) *FakeClock { return &FakeClock{now: start} }

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// At schedules f at t; a t already past runs at the next Advance.
func (c *FakeClock) At(at time.Time, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: at, f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		stopped := !t.done
		t.done = true
		return stopped
	}
}

// Advance moves the clock forward by d, running every callback that
// comes due, earliest first.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *fakeTimer
		for _, t := range c.timers {
			if !t.done && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		next.done = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

// FireDue runs a pure machine's timers in fake time, as the coordinator
// runtime does: every timer in timers (key → deadline) due by end, in
// deadline order (ties by key), each with *now moved to its deadline and
// its entry removed first. fire may set or cancel timers in the map.
// *now is left at the last deadline fired; the caller moves it to end.
func FireDue(timers map[string]time.Time, now *time.Time, end time.Time, fire func(key string)) {
	for {
		key, at := "", time.Time{}
		for k, t := range timers {
			if at.IsZero() || t.Before(at) || (t.Equal(at) && k < key) {
				key, at = k, t
			}
		}
		if key == "" || at.After(end) {
			return
		}
		delete(timers, key)
		if at.After(*now) {
			*now = at
		}
		fire(key)
	}
}
