package sharecoord_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/powerloss"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestPowerLoss runs share consumers through the host the way the wire
// layer will (Next, a read of the log, Acquire; then an acknowledgement
// per record: accept, reject, release, or none at all), on Pebble over a
// filesystem that keeps only what was synced, and cuts the power under
// load once a random number of acknowledgements have been answered.
// After a restart on what the disk kept, a drain fetches and accepts
// every record still to be delivered, and:
//
//   - a record whose acquisition was answered and never acknowledged is
//     still its member's: the member's acceptance after the restart (a
//     client's retry) succeeds;
//   - no record whose acceptance or rejection was answered, or whose
//     answered release reached the delivery limit (archived), is
//     delivered again;
//   - once the members are gone (released), a record acquired at
//     delivery count c comes back at more than c, never past the
//     delivery limit: acquisitions are durable once answered;
//   - nothing is lost: every partition ends with its start offset at the
//     log's end, every record finished.
//
// It fails if an acknowledgement is answered before its records are
// synced (checked: with every answer of the machine marked early, so
// that it leaves once written rather than synced, every seed delivers
// an accepted record again).
func TestPowerLoss(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { powerLoss(t, seed) })
	}
}

const (
	plParts    = 6
	plLogEnd   = 2000
	plLimit    = 3 // the delivery limit: releases archive at the third
	plSlowSync = time.Millisecond
)

// plNode is a host on Pebble over the power supply.
type plNode struct {
	st *pebble.Store
	u  *coordinator.GlobalUnit
	h  *sharecoord.Host
}

func startPLNode(t *testing.T, mem vfs.FS, power *powerloss.Power) *plNode {
	t.Helper()
	st, err := pebble.Open("db", pebble.Options{FS: power.FS(mem, plSlowSync)})
	if err != nil {
		t.Fatal(err)
	}
	n := &plNode{st: st}
	if n.u, err = coordinator.StartGlobal(coordinator.GlobalConfig{Store: st}); err != nil {
		t.Fatal(err)
	}
	if n.h, err = sharecoord.Start(sharecoord.Config{Store: st, Global: n.u, Shards: 3,
		// Locks outlast the test: a record kept comes back only by the
		// crash.
		Machine: sharestate.Config{Limits: sharestate.Limits{DeliveryLimit: plLimit, LockDuration: time.Hour}}}); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *plNode) close() {
	n.h.Close()
	n.u.Close()
	n.st.Close()
}

// plModel is what the consumers were told, per partition and offset.
type plModel struct {
	mu sync.Mutex
	// final: an answered acceptance, rejection or release at the
	// limit; the record must never be delivered again.
	final [plParts][plLogEnd]bool
	// acquired is the delivery count of the last answered acquisition,
	// holder its member.
	acquired [plParts][plLogEnd]int16
	holder   [plParts][plLogEnd]string
	// settled: an acknowledgement of the record was sent after its last
	// acquisition (answered or not): it may have changed durably.
	settled [plParts][plLogEnd]bool
	acks    int // acknowledgements answered
}

func powerLoss(t *testing.T, seed uint64) {
	mem := vfs.NewStrictMem()
	power := powerloss.New()
	n := startPLNode(t, mem, power)
	l := plog{end: plLogEnd, batch: 10}
	m := &plModel{}
	var down atomic.Bool // the power is cut: later answers count for nothing
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var keys []sharestate.Key
	for p := range int32(plParts) {
		keys = append(keys, key("g", p))
	}
	for c := range 4 {
		wg.Go(func() {
			consume(ctx, n.h, keys, l, m, &down, fmt.Sprintf("m%d", c), rand.New(rand.NewPCG(seed, uint64(c))))
		})
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	cutAfter := 10 + rng.IntN(100)
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("%d acknowledgements answered", cutAfter), func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.acks >= cutAfter
	})
	down.Store(true)
	power.Cut()
	cancel()
	wg.Wait()
	n.close()
	mem.ResetToSyncedState()
	if err := power.Restore(t.TempDir(), ".none"); err != nil {
		t.Fatal(err)
	}

	n = startPLNode(t, mem, power)
	defer n.close()
	redelivered, kept := drain(t, n.h, keys, l, m)
	t.Logf("cut after %d acknowledgements; %d records held at the cut accepted by their members after it; %d records acquired before the cut delivered again", cutAfter, kept, redelivered)
}

// drain first has each record whose answered acquisition was never
// acknowledged accepted by its member, which must succeed (the lock was
// kept), then releases the members (they are gone), then fetches and
// accepts every record still to be delivered in the partitions keys
// through h, checking each against what m says was answered, and then
// that every partition is finished. It returns how many records acquired
// before were delivered again, and how many were kept for their members.
func drain(t *testing.T, h *sharecoord.Host, keys []sharestate.Key, l plog, m *plModel) (redelivered, kept int) {
	t.Helper()
	ctx := context.Background()
	members := map[string]bool{}
	for p, k := range keys {
		for o := int64(0); o < plLogEnd; o++ {
			member := m.holder[p][o]
			if member == "" {
				continue
			}
			members[member] = true
			if m.settled[p][o] || m.final[p][o] {
				continue
			}
			if r := h.Ack(ctx, sharestate.AckCmd{Key: k, Member: member, Acks: []sharestate.Ack{{First: o, Last: o, Types: []sharestate.AckType{sharestate.AckAccept}}}}); r.Code != 0 {
				t.Fatalf("partition %s offset %d, acquired by %s at %d and never acknowledged: its acceptance after the restart: %v",
					name(k), o, member, m.acquired[p][o], kerr.ErrorForCode(r.Code))
			}
			m.final[p][o] = true
			kept++
		}
	}
	for member := range members {
		if r := h.Release(ctx, sharestate.ReleaseCmd{Group: "g", Member: member}); r.Code != 0 {
			t.Fatalf("release of %s: %v", member, kerr.ErrorForCode(r.Code))
		}
	}
	for p, k := range keys {
		for {
			a, code := tryFetch(ctx, h, k, "drain", l, 200, sharestate.Limits{})
			if code != 0 {
				t.Fatalf("drain of partition %s: %v", name(k), kerr.ErrorForCode(code))
			}
			if len(a.Records) == 0 {
				break
			}
			for _, r := range a.Records {
				for o := r.First; o <= r.Last; o++ {
					c, fin, settled := m.acquired[p][o], m.final[p][o], m.settled[p][o]
					switch {
					case fin:
						t.Fatalf("partition %s offset %d delivered again (at %d) after its acknowledgement was answered", name(k), o, r.DeliveryCount)
					case r.DeliveryCount > plLimit:
						t.Fatalf("partition %s offset %d delivered at %d, past the limit %d", name(k), o, r.DeliveryCount, plLimit)
					case c > 0 && !settled:
						t.Fatalf("partition %s offset %d acquired at %d, never acknowledged, accepted since, back at %d", name(k), o, c, r.DeliveryCount)
					case c > 0 && r.DeliveryCount <= c:
						t.Fatalf("partition %s offset %d acquired at %d, back at %d: a delivery lost", name(k), o, c, r.DeliveryCount)
					}
					if c > 0 {
						redelivered++
					}
				}
				ack(t, h, k, "drain", r.First, r.Last, sharestate.AckAccept)
			}
		}
		ds := h.Describe(ctx, sharestate.DescribeCmd{Partitions: []sharestate.Key{k}})
		if len(ds) != 1 || ds[0].StartOffset != l.end || ds[0].EndOffset != l.end {
			t.Fatalf("partition %s not finished after the drain: %+v", name(k), ds)
		}
	}
	return redelivered, kept
}

// consume is one share consumer: it fetches from a random partition of
// keys (plParts at most, m's partition i is keys[i]) and acknowledges
// each record as the rng says, recording in m what was answered while
// the power was on (down unset).
func consume(ctx context.Context, h *sharecoord.Host, keys []sharestate.Key, l plog, m *plModel, down *atomic.Bool, member string, rng *rand.Rand) {
	for ctx.Err() == nil {
		p := rng.IntN(len(keys))
		k := keys[p]
		a, code := tryFetch(ctx, h, k, member, l, 1+rng.IntN(30), sharestate.Limits{})
		if code != 0 || down.Load() {
			continue
		}
		m.mu.Lock()
		for _, r := range a.Records {
			for o := r.First; o <= r.Last; o++ {
				m.acquired[p][o], m.holder[p][o], m.settled[p][o] = r.DeliveryCount, member, false
			}
		}
		m.mu.Unlock()
		for _, r := range a.Records {
			types := make([]sharestate.AckType, r.Last-r.First+1)
			none := true
			for i := range types {
				switch x := rng.IntN(10); {
				case x < 6:
					types[i] = sharestate.AckAccept
				case x < 7:
					types[i] = sharestate.AckReject
				case x < 9:
					types[i] = sharestate.AckRelease
				default:
					types[i] = -1 // kept: never acknowledged
				}
				none = none && types[i] < 0
			}
			if none {
				continue
			}
			// The records kept are left out: one acknowledgement per
			// run of the others.
			var acks []sharestate.Ack
			for i := 0; i < len(types); {
				if types[i] < 0 {
					i++
					continue
				}
				j := i
				for j+1 < len(types) && types[j+1] >= 0 {
					j++
				}
				acks = append(acks, sharestate.Ack{First: r.First + int64(i), Last: r.First + int64(j), Types: types[i : j+1]})
				i = j + 1
			}
			m.mu.Lock()
			for _, a := range acks {
				for o := a.First; o <= a.Last; o++ {
					m.settled[p][o] = true
				}
			}
			m.mu.Unlock()
			res := h.Ack(ctx, sharestate.AckCmd{Key: k, Member: member, Acks: acks})
			if res.Code != 0 || down.Load() {
				continue
			}
			m.mu.Lock()
			for _, a := range acks {
				for o := a.First; o <= a.Last; o++ {
					t := a.Types[o-a.First]
					if t == sharestate.AckAccept || t == sharestate.AckReject || t == sharestate.AckRelease && r.DeliveryCount >= plLimit {
						m.final[p][o] = true
					}
				}
			}
			m.acks++
			m.mu.Unlock()
		}
	}
}
