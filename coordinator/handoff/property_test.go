package handoff_test

// A property test of the warm-handoff machine: random schedules of up to
// 30 consumers registering, dying, disconnecting and coming back within
// their lease (or not), slow to warm and slow to release, with partition
// growth and coordinator restarts, in fake time. A seed replays one:
//
//	go test ./coordinator/handoff -run TestPropertyHandoff -hseed=N -v
//
// Checked after every event:
//  1. Every handoff's new owner is registered, and so is the old owner of
//     a complete one (no handoff leaks).
//  2. Unless a rebalance is due, every partition has a registered holder:
//     its owner or a side of its handoff (never zero holders while a
//     consumer is alive).
//  3. A connected consumer believes it owns exactly what the coordinator
//     says it owns.
//
// Once the chaos stops (every live consumer connected and quick), within
// the lease, the debounce and two sweeps: every partition has exactly one
// owner, a registered one; no handoff is left; the counts differ by at
// most one.

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/handoff"
)

var (
	hpropSeed      = flag.Int64("hseed", 0, "TestPropertyHandoff: replay only this seed")
	hpropSchedules = flag.Int("hschedules", 150, "TestPropertyHandoff: how many schedules")
)

type hpConsumer struct {
	name      string
	alive     bool // the process exists
	connected bool
	backAt    time.Time // a disconnected live consumer reconnects then
	owned     map[int32]bool
	seen      int // commands of its stream already handled
	warmDelay time.Duration
	relDelay  time.Duration
	// pending actions: partition → when to say ready / released.
	ready, released map[int32]time.Time
}

// hpStats counts what the schedules exercised, over all of them.
var hpStats = map[string]int{}

type hpSim struct {
	t     *testing.T
	rng   *rand.Rand
	h     *harness
	cs    []*hpConsumer
	trace []string
}

func TestPropertyHandoff(t *testing.T) {
	seeds := []int64{*hpropSeed}
	if *hpropSeed == 0 {
		seeds = seeds[:0]
		for i := range *hpropSchedules {
			seeds = append(seeds, int64(i)+1)
		}
	}
	failed := 0
	for _, seed := range seeds {
		if msg := runHandoffSchedule(t, seed, *hpropSeed != 0); msg != "" {
			failed++
			t.Error(msg)
			if failed == 3 {
				break
			}
		}
	}
	t.Logf("%d schedules: %v", len(seeds), hpStats)
	if *hpropSeed == 0 && *hpropSchedules >= 50 {
		for _, k := range []string{"ready", "released", "refused", "restart", "death", "reconnect", "growth"} {
			if hpStats[k] == 0 {
				t.Errorf("no schedule exercised %q", k)
			}
		}
	}
}

func runHandoffSchedule(t *testing.T, seed int64, long bool) (msg string) {
	s := &hpSim{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 7))}
	ft := &fatalTB{T: t}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fatalSignal); !ok {
				panic(r)
			}
			keep := 40
			if long {
				keep = 2000
			}
			tr := s.trace
			if len(tr) > keep {
				tr = tr[len(tr)-keep:]
			}
			msg = fmt.Sprintf("handoff schedule seed=%d: %s\nreplay: go test ./coordinator/handoff -run TestPropertyHandoff -hseed=%d -v\n%s", seed, ft.msg, seed, strings.Join(tr, "\n"))
		}
	}()
	s.h = newHarnessTB(ft, int32(1+s.rng.IntN(64)))
	// The guard after every 16th event and at the end: schedules are long.
	s.h.guardEvery = 16
	defer s.h.guard()
	steps := 100 + s.rng.IntN(200)
	maxC := 1 + s.rng.IntN(30)
	for step := 0; step < steps; step++ {
		switch x := s.rng.Float64(); {
		case x < 0.45:
			s.advance(time.Duration(1+s.rng.IntN(4000)) * time.Millisecond)
		case x < 0.60 && len(s.cs) < maxC:
			s.spawn()
		case x < 0.70:
			s.disconnect()
		case x < 0.75:
			s.kill()
		case x < 0.77 && s.h.parts < 200:
			s.h.parts += int32(1 + s.rng.IntN(8))
			s.tr("partitions → %d", s.h.parts)
			hpStats["growth"]++
			s.h.apply(s.h.m.Partitions(s.h.now, grp, topic, s.h.parts))
		case x < 0.79:
			s.tr("coordinator restart")
			hpStats["restart"]++
			s.h.restart()
			for _, c := range s.cs {
				if c.connected {
					c.connected = false
					c.backAt = s.h.now.Add(time.Duration(s.rng.IntN(5000)) * time.Millisecond)
				}
			}
		default:
			s.advance(time.Duration(s.rng.IntN(300)) * time.Millisecond)
		}
	}
	// Quiet: every live consumer reconnects and is quick.
	s.tr("quiet")
	for _, c := range s.cs {
		c.warmDelay, c.relDelay = 0, 0
		if c.alive && !c.connected {
			c.backAt = s.h.now
		}
		for p := range c.ready {
			c.ready[p] = s.h.now
		}
		for p := range c.released {
			c.released[p] = s.h.now
		}
	}
	s.advance(s.h.cfg.LeaseTTL + 2*s.h.cfg.LeaseTTL/2 + 3*s.h.cfg.Debounce)
	s.converged()
	return ""
}

func (s *hpSim) tr(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf("+%v ", s.h.now.Sub(start))+fmt.Sprintf(format, args...))
}

func (s *hpSim) spawn() {
	c := &hpConsumer{name: fmt.Sprintf("c%02d", len(s.cs)), alive: true, owned: map[int32]bool{}, ready: map[int32]time.Time{}, released: map[int32]time.Time{}}
	c.warmDelay = time.Duration(s.rng.IntN(3000)) * time.Millisecond
	c.relDelay = time.Duration(s.rng.IntN(3000)) * time.Millisecond
	if s.rng.IntN(5) == 0 {
		c.warmDelay = time.Duration(s.rng.IntN(60)) * time.Second // slower than a sweep, or a lease
	}
	s.cs = append(s.cs, c)
	s.connect(c)
}

func (s *hpSim) connect(c *hpConsumer) {
	s.tr("%s registers", c.name)
	if c.seen > 0 || !c.backAt.IsZero() {
		hpStats["reconnect"]++
	}
	c.connected, c.owned, c.seen = true, map[int32]bool{}, 0
	c.ready, c.released = map[int32]time.Time{}, map[int32]time.Time{}
	s.h.register(c.name)
	s.react()
}

func (s *hpSim) pick(connected bool) *hpConsumer {
	var cands []*hpConsumer
	for _, c := range s.cs {
		if c.alive && c.connected == connected {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return cands[s.rng.IntN(len(cands))]
}

// disconnect drops a stream; the consumer comes back within its lease,
// or a little after it.
func (s *hpSim) disconnect() {
	c := s.pick(true)
	if c == nil {
		return
	}
	c.connected = false
	c.backAt = s.h.now.Add(time.Duration(s.rng.Int64N(int64(s.h.cfg.LeaseTTL * 6 / 5))))
	s.tr("%s disconnects, back at +%v", c.name, c.backAt.Sub(start))
	s.h.disconnect(c.name)
	s.check()
}

func (s *hpSim) kill() {
	c := s.pick(true)
	if c == nil {
		return
	}
	s.tr("%s dies", c.name)
	hpStats["death"]++
	c.alive, c.connected = false, false
	s.h.disconnect(c.name)
	s.check()
}

// react handles the new commands of every connected consumer's stream.
func (s *hpSim) react() {
	for _, c := range s.cs {
		if !c.connected {
			continue
		}
		cmds := s.h.got[s.h.stream[c.name]]
		for _, cmd := range cmds[c.seen:] {
			switch cmd.Kind {
			case handoff.Assignment:
				for _, tp := range cmd.Assigned {
					c.owned[tp.Partition] = true
				}
				for _, tp := range cmd.Unassigned {
					delete(c.owned, tp.Partition)
				}
			case handoff.Warm:
				c.ready[cmd.Partition.Partition] = s.h.now.Add(c.warmDelay)
			case handoff.Release:
				delete(c.owned, cmd.Partition.Partition)
				c.released[cmd.Partition.Partition] = s.h.now.Add(c.relDelay)
			}
		}
		c.seen = len(cmds)
	}
	s.check()
}

// advance moves time by d, stopping at every timer and consumer action.
func (s *hpSim) advance(d time.Duration) {
	end := s.h.now.Add(d)
	for {
		next := end
		for _, at := range s.h.timers {
			if at.Before(next) {
				next = at
			}
		}
		for _, c := range s.cs {
			if !c.alive {
				continue
			}
			if !c.connected && c.backAt.Before(next) {
				next = c.backAt
			}
			if c.connected {
				for _, at := range c.ready {
					if at.Before(next) {
						next = at
					}
				}
				for _, at := range c.released {
					if at.Before(next) {
						next = at
					}
				}
			}
		}
		if next.Before(s.h.now) {
			next = s.h.now
		}
		s.h.advance(next.Sub(s.h.now))
		s.react()
		for _, c := range s.cs {
			s.act(c)
		}
		if !next.Before(end) {
			return
		}
	}
}

func (s *hpSim) act(c *hpConsumer) {
	now := s.h.now
	if !c.alive {
		return
	}
	if !c.connected {
		if !now.Before(c.backAt) {
			s.connect(c)
		}
		return
	}
	for p, at := range c.ready {
		if !now.Before(at) {
			delete(c.ready, p)
			err := s.h.ready(c.name, p)
			s.tr("%s ready %d: %v", c.name, p, err)
			hpStats[map[bool]string{true: "ready", false: "refused"}[err == nil]]++
			// It may have been cancelled (the old owner died and the
			// partition was placed again, or the coordinator
			// restarted and resent the warm): a refusal must say so.
			if err != nil && !isCode(err, handoff.FailedPrecondition) {
				s.h.t.Fatalf("%s ready %d: %v", c.name, p, err)
			}
			s.react()
		}
	}
	for p, at := range c.released {
		if !now.Before(at) {
			delete(c.released, p)
			err := s.h.released(c.name, p)
			s.tr("%s released %d: %v", c.name, p, err)
			hpStats[map[bool]string{true: "released", false: "refused"}[err == nil]]++
			if err != nil && !isCode(err, handoff.FailedPrecondition) {
				s.h.t.Fatalf("%s released %d: %v", c.name, p, err)
			}
			s.react()
		}
	}
}

func isCode(err error, code handoff.Code) bool {
	e, ok := err.(*handoff.Error)
	return ok && e.Code == code
}

// check runs invariants 1 and 3 (the harness runs 2 after every output).
func (s *hpSim) check() {
	v := s.h.m.View(grp)
	reg := map[string]bool{}
	for _, c := range v.Consumers {
		reg[c.Name] = true
	}
	for tp, hd := range v.Handoffs {
		if !reg[hd.To] || (hd.Complete && !reg[hd.From]) {
			s.h.t.Fatalf("invariant 1: handoff of %s %+v outlives a consumer (registered: %v)", tp, hd, reg)
		}
	}
	for _, c := range s.cs {
		if !c.connected {
			continue
		}
		for p := range s.h.parts {
			tp := handoff.TP{Topic: topic, Partition: p}
			if (v.Owners[tp] == c.name) != c.owned[p] {
				s.h.t.Fatalf("invariant 3: %s believes it owns %d: %v; the coordinator says %q", c.name, p, c.owned[p], v.Owners[tp])
			}
		}
	}
}

func (s *hpSim) converged() {
	v := s.h.m.View(grp)
	live := map[string]bool{}
	for _, c := range s.cs {
		if c.alive {
			live[c.name] = true
		}
	}
	if len(v.Handoffs) != 0 {
		s.h.t.Fatalf("convergence: handoffs left %v", v.Handoffs)
	}
	if len(live) == 0 {
		if len(v.Owners) != 0 {
			s.h.t.Fatalf("convergence: no live consumer, owners %v", v.Owners)
		}
		return
	}
	counts := map[string]int{}
	for p := range s.h.parts {
		o := v.Owners[handoff.TP{Topic: topic, Partition: p}]
		if !live[o] {
			s.h.t.Fatalf("convergence: partition %d owned by %q, not a live consumer", p, o)
		}
		counts[o]++
	}
	lo, hi := 1<<30, 0
	for name := range live {
		lo, hi = min(lo, counts[name]), max(hi, counts[name])
	}
	if hi-lo > 1 {
		s.h.t.Fatalf("convergence: unbalanced %v", counts)
	}
}

// fatalTB turns the harness's failures into a panic that ends one
// schedule with its message.
type fatalTB struct {
	*testing.T
	msg string
}

type fatalSignal struct{}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(fatalSignal{})
}
func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	panic(fatalSignal{})
}
