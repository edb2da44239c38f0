package pebble

import (
	"errors"
	"runtime"
	"testing"

	"github.com/cohort-dev/cohort/store"
)

// TestAcquireWaitsForCheckedWrite pauses an old handle's write after its
// fence check passed and before Pebble ordered it, and checks that a
// fencing Acquire does not return until that write is ordered: otherwise
// the write would take effect after the new owner's Acquire returned. The
// conformance suite's race test can only sample this window; here it is
// held open.
func TestAcquireWaitsForCheckedWrite(t *testing.T) {
	for _, via := range []string{"Apply", "ApplyAsync"} {
		t.Run(via, func(t *testing.T) {
			testAcquireWaitsForCheckedWrite(t, func(h store.Handle, b *store.Batch) error {
				if via == "Apply" {
					return h.Apply(b)
				}
				wait, err := h.ApplyAsync(b)
				if err != nil {
					return err
				}
				return wait()
			})
		})
	}
}

func testAcquireWaitsForCheckedWrite(t *testing.T, write func(store.Handle, *store.Batch) error) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old, err := s.Acquire([]byte("s/"))
	if err != nil {
		t.Fatal(err)
	}
	sc := old.(*handle).scope

	paused, resume := make(chan struct{}), make(chan struct{})
	s.fenceChecked = func() { close(paused); <-resume } // the one write below
	wrote := make(chan error, 1)
	go func() {
		var b store.Batch
		b.Put([]byte("s/k"), []byte("old"))
		wrote <- write(old, &b)
	}()
	<-paused

	acquired := make(chan store.Handle, 1)
	go func() {
		h, err := s.Acquire([]byte("s/"))
		if err != nil {
			t.Error(err)
		}
		acquired <- h
	}()
	// Once Acquire waits for the scope lock, TryRLock fails (sync.RWMutex
	// blocks new readers behind a waiting writer). Until then, Acquire
	// must not have returned.
	for sc.mu.TryRLock() {
		sc.mu.RUnlock()
		select {
		case <-acquired:
			close(resume)
			t.Fatal("Acquire returned while a write that passed the fence check was not yet ordered")
		default:
		}
		runtime.Gosched()
	}
	s.fenceChecked = nil // no later write pauses; the paused one read it before <-paused
	close(resume)
	cur := <-acquired

	// The paused write was ordered before Acquire returned: visible now.
	if v, err := s.Get([]byte("s/k")); err != nil || string(v) != "old" {
		t.Fatalf("after Acquire returned, s/k = %q, %v; want the old handle's write", v, err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("the old handle's write, started before the fence: %v", err)
	}
	var b store.Batch
	b.Put([]byte("s/k"), []byte("stale"))
	if err := write(old, &b); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("old handle's write after the fence = %v, want ErrFenced", err)
	}
	if cur == nil || cur.Fenced() {
		t.Fatal("the new handle is missing or fenced")
	}
}
