package kafka

import (
	"testing"
	"time"
)

// Waiters are served in order, a waiter that gives up holds nothing, and
// one granted while giving up hands its bytes back.
func TestBudget(t *testing.T) {
	b := newBudget(10)
	never := make(chan struct{})
	if !b.acquire(8, never, never) {
		t.Fatal("8 of 10 free bytes were refused")
	}
	big, small := make(chan bool), make(chan bool)
	go func() { big <- b.acquire(5, never, never) }()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiters) == 1 })
	// 2 bytes are free, but the small request queues behind the big one.
	go func() { small <- b.acquire(2, never, never) }()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiters) == 2 })
	b.release(8)
	if !<-big || !<-small {
		t.Fatal("waiters not granted after a release")
	}
	if b.free != 3 {
		t.Fatalf("free %d, want 3", b.free)
	}

	stop := make(chan struct{})
	gave := make(chan bool)
	go func() { gave <- b.acquire(10, stop, never) }()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiters) == 1 })
	close(stop)
	if <-gave {
		t.Fatal("acquire returned true after stop")
	}
	b.release(7)
	if b.free != 10 || len(b.waiters) != 0 {
		t.Fatalf("free %d with %d waiters, want 10 and none", b.free, len(b.waiters))
	}
	var none *budget
	if !none.acquire(1<<40, never, never) {
		t.Fatal("an unbounded budget refused")
	}
}

// waitFor is testkit.Eventually, which this internal test cannot import.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
	}
}
