package kafka

import "sync"

// budget bounds the bytes of request frames that are being read or are
// waiting for their response, across all connections: Kafka's
// queued.max.request.bytes, which Kafka enforces with a MemoryPool that a
// connection must allocate its receive buffer from (KIP-72). A reader
// acquires a frame's size before it allocates the frame, and the writer
// releases it once the response is built, so memory held by requests is
// bounded however many connections declare large frames.
//
// Waiters are served in arrival order, so a large frame is not starved
// by a stream of small ones.
type budget struct {
	mu      sync.Mutex
	free    int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

// newBudget returns a budget of total bytes; nil (no bound) if total is
// not positive. A nil *budget grants everything.
func newBudget(total int64) *budget {
	if total <= 0 {
		return nil
	}
	return &budget{free: total}
}

// acquire waits until n bytes are free and takes them. It returns false,
// holding nothing, if stop or gone is closed first. n must not exceed the
// total (Config.validate makes MaxRequestBytes at most the total).
func (b *budget) acquire(n int64, stop, gone <-chan struct{}) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	if len(b.waiters) == 0 && b.free >= n {
		b.free -= n
		b.mu.Unlock()
		return true
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return true
	case <-stop:
	case <-gone:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Granted while giving up: hand the bytes back.
		b.free += n
	default:
		for i, o := range b.waiters {
			if o == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	// Either way the head may now fit.
	b.grantLocked()
	return false
}

// release returns n bytes taken by acquire.
func (b *budget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	b.grantLocked()
	b.mu.Unlock()
}

func (b *budget) grantLocked() {
	for len(b.waiters) > 0 && b.free >= b.waiters[0].n {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.free -= w.n
		close(w.ready)
	}
}
