package sharestate_test

// A property test: members fetch, acknowledge (accept, release, reject,
// gap, renew, and acknowledgements that must fail), leave; locks expire;
// in half the schedules the group has a dead-letter topic, so rejected
// records and those at the delivery limit wait ARCHIVING until the host
// says their dead letters are written;
// producers append batches, some of aborted transactions; the log's
// start moves; the shard crashes and loads. A model of every offset
// (what the machine told: which member holds it, with which delivery
// count, what became of it) checks every answer, and after every step:
//
//   - the one record rule (machine.CheckReplay) and the machine's Check;
//   - the machine's view of every offset in flight is the model's;
//   - no record is delivered while another member holds it or once it is
//     acknowledged or archived, and no record is accepted twice;
//   - a delivery's count is the deliveries so far, never past the
//     limit (a crash takes none back: acquisitions are written);
//   - the start offset never passes a record that is not finished
//     (acknowledged, archived, or gone from the log).
//
// At the end every lock expires, and every offset is finished or
// available (no record is lost); then a member drains the partition,
// which must reach the log's end with every record accepted once or
// archived.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/machinetest"
	"github.com/cohort-dev/cohort/record"
)

// propTB stops a schedule at the first broken invariant.
type propTB = machinetest.Panicking

func TestProperty(t *testing.T) {
	schedules := 200
	if testing.Short() {
		schedules = 30
	}
	for i := range schedules {
		seed := uint64(i) + 1
		if msg, trace := runSchedule(rand.New(rand.NewPCG(seed, seed*7919)), 300); msg != "" {
			t.Fatalf("seed %d: %s\nlast steps:\n%s", seed, msg, trace)
		}
	}
}

// chooser is where a schedule's choices come from: a seeded random
// source, or the fuzzer's bytes.
type chooser interface{ IntN(n int) int }

// mstate is what the model knows of an offset.
type mstate int8

const (
	mAvailable mstate = iota
	mAcquired
	mAcknowledged
	mArchiving
	mArchived
)

type offset struct {
	state    mstate
	count    int16
	member   string
	deadline time.Time
	// dlq: acquired while the group had a dead-letter topic.
	dlq bool
	// deliveries counts the times it was acquired, accepted its
	// successful acceptances.
	deliveries, accepted int
}

// model is one partition as the property knows it.
type model struct {
	key     sharestate.Key
	offsets []offset // by offset, up to the log's end
	view    sharestate.Description
}

func (m *model) at(o int64) *offset {
	for int64(len(m.offsets)) <= o {
		m.offsets = append(m.offsets, offset{})
	}
	return &m.offsets[o]
}

// settle is what becomes of an acquired offset released (by its member,
// its lock's expiry, its member's leaving): available with its count, or
// archived at the limit (on its way to the dead-letter topic first, if
// it was acquired under one).
func settle(x *offset, limit int16) {
	x.state, x.member = mAvailable, ""
	if x.count >= limit {
		x.state = finalState(x)
	}
}

// finalState is where a rejected record, or one released at the limit,
// goes.
func finalState(x *offset) mstate {
	if x.dlq {
		return mArchiving
	}
	return mArchived
}

func runSchedule(ch chooser, steps int) (msg string, trace string) {
	var log []string
	return machinetest.Catch(func() { schedule(ch, steps, &log) }, &log, 25)
}

// schedule runs the steps, appending each to log; a broken invariant
// panics (machinetest.Panicking).
func schedule(ch chooser, steps int, logp *[]string) {
	log := *logp
	defer func() { *logp = log }()
	limit := []int16{2, 3, 5}[ch.IntN(3)]
	lock := 10 * time.Second
	cfg := sharestate.Config{
		Limits:        sharestate.Limits{DeliveryLimit: limit, LockDuration: lock, MaxInFlight: []int{6, 20, 2000}[ch.IntN(3)]},
		SnapshotEvery: []int{1, 3, 10, 500}[ch.IntN(4)],
	}
	h := newHarness(propTB{}, cfg)
	h.guard = false
	dlq := ch.IntN(2) == 0
	members := []string{"m1", "m2", "m3"}
	models := []*model{{key: key("g", "t/0")}, {key: key("g", "t/1")}}
	for _, m := range models {
		h.logOf(m.key).produce(false, 1+ch.IntN(5), 1+ch.IntN(5))
	}
	fail := propTB{}.Fatalf

	// refresh reads the machine's view and checks it against the model.
	refresh := func(m *model) {
		m.view = h.describe(m.key)
		d := m.view
		if d.Code != 0 {
			return
		}
		l := h.logOf(m.key)
		aborted := func(o int64) bool {
			return slices.ContainsFunc(l.aborted, func(a sharestate.Range) bool { return a.First <= o && o <= a.Last })
		}
		for o := int64(0); o < d.StartOffset; o++ {
			x := m.at(o)
			if x.state == mAvailable && aborted(o) {
				// Archived as an aborted transaction's when a fetch
				// read it, and passed at once.
				x.state = mArchived
			}
			if o >= l.start && x.state != mAcknowledged && x.state != mArchived {
				fail("%s: start offset %d passed offset %d, which is %v", name(m.key), d.StartOffset, o, *x)
			}
		}
		for _, r := range d.Runs {
			for o := r.First; o <= r.Last; o++ {
				x := m.at(o)
				want := map[record.ShareState]mstate{record.ShareAvailable: mAvailable, record.ShareAcquired: mAcquired,
					record.ShareAcknowledged: mAcknowledged, record.ShareArchiving: mArchiving, record.ShareArchived: mArchived}[r.State]
				if want == mArchived && x.state == mAvailable && aborted(o) {
					// Archived as an aborted transaction's.
					x.state = mArchived
				}
				if x.state != want || x.count != r.DeliveryCount || x.member != r.Member {
					fail("%s offset %d: machine %s/%d %q, model %v", name(m.key), o, r.State, r.DeliveryCount, r.Member, *x)
				}
			}
		}
		for o := d.EndOffset; o < int64(len(m.offsets)); o++ {
			if x := m.at(o); x.state == mAcquired && o >= d.StartOffset {
				fail("%s offset %d acquired past the end offset %d", name(m.key), o, d.EndOffset)
			}
		}
	}
	fetch := func(m *model, member string, c sharestate.AcquireCmd, maxBatches int) string {
		l := h.logOf(m.key)
		next := sharestate.NextCmd{Reset: sharestate.ResetEarliest}
		c.Limits.DeadLetter = dlq
		_, a := h.fetch(m.key, member, next, c, maxBatches)
		n := 0
		for _, r := range a.Records {
			for o := r.First; o <= r.Last; o++ {
				x := m.at(o)
				x.deliveries++
				switch {
				case x.state != mAvailable:
					fail("%s offset %d delivered to %s while %v", name(m.key), o, member, *x)
				case r.DeliveryCount != x.count+1 || int(r.DeliveryCount) != x.deliveries:
					fail("%s offset %d delivered with count %d, model %v", name(m.key), o, r.DeliveryCount, *x)
				case r.DeliveryCount > limit:
					fail("%s offset %d delivered with count %d past the limit %d", name(m.key), o, r.DeliveryCount, limit)
				case slices.ContainsFunc(l.aborted, func(a sharestate.Range) bool { return a.First <= o && o <= a.Last }):
					fail("%s offset %d of an aborted transaction delivered", name(m.key), o)
				case o < l.start:
					fail("%s offset %d below the log start %d delivered", name(m.key), o, l.start)
				}
				x.state, x.count, x.member, x.deadline, x.dlq = mAcquired, r.DeliveryCount, member, h.now.Add(lock), dlq
				n++
			}
		}
		if c.Mode == sharestate.RecordLimit && n > c.MaxRecords {
			fail("%s: %d records acquired in record_limit mode, max %d", name(m.key), n, c.MaxRecords)
		}
		return renderAcquired(a.Records)
	}
	expire := func() {
		for _, m := range models {
			for i := range m.offsets {
				if x := &m.offsets[i]; x.state == mAcquired && !x.deadline.After(h.now) {
					settle(x, limit)
				}
			}
		}
	}

	for step := range steps {
		m := models[ch.IntN(len(models))]
		member := members[ch.IntN(len(members))]
		var desc string
		switch op := ch.IntN(100); {
		case op < 30:
			c := sharestate.AcquireCmd{MaxRecords: 1 + ch.IntN(8), BatchSize: ch.IntN(4)}
			if ch.IntN(3) == 0 {
				c.Mode = sharestate.RecordLimit
			}
			got := fetch(m, member, c, ch.IntN(4))
			desc = fmt.Sprintf("fetch %s %s max=%d mode=%d size=%d → %s", name(m.key), member, c.MaxRecords, c.Mode, c.BatchSize, got)
		case op < 60:
			c, valid := ackOf(ch, m, member)
			r := h.send(c).(sharestate.Result)
			desc = fmt.Sprintf("ack %s %s %s → %s", name(m.key), member, renderAcks(c.Acks), codeName(r.Code))
			if (r.Code == 0) != valid {
				fail("%s: answered %s, model says valid=%v", desc, codeName(r.Code), valid)
			}
			if r.Code == 0 {
				for _, a := range c.Acks {
					for o := max(a.First, m.view.StartOffset); o <= a.Last; o++ {
						x := m.at(o)
						t := a.Types[0]
						if len(a.Types) > 1 {
							t = a.Types[o-a.First]
						}
						switch t {
						case sharestate.AckAccept:
							x.state, x.member = mAcknowledged, ""
							if x.accepted++; x.accepted > 1 {
								fail("%s offset %d accepted twice", name(m.key), o)
							}
						case sharestate.AckRelease:
							settle(x, limit)
						case sharestate.AckReject:
							x.state, x.member = finalState(x), ""
						case sharestate.AckGap:
							x.state, x.member = mArchived, ""
						case sharestate.AckRenew:
							x.deadline = h.now.Add(lock)
						}
					}
				}
			}
		case op < 66:
			r := h.send(sharestate.ReleaseCmd{Group: "g", Member: member}).(sharestate.Result)
			desc = fmt.Sprintf("release %s → %s", member, codeName(r.Code))
			for _, m := range models {
				for i := range m.offsets {
					if x := &m.offsets[i]; x.state == mAcquired && x.member == member {
						settle(x, limit)
					}
				}
			}
		case op < 80:
			d := time.Duration(ch.IntN(12000)) * time.Millisecond
			h.advance(d)
			expire()
			desc = "advance " + d.String()
		case op < 84:
			// The host wrote a partition's dead letters (some of them).
			first := int64(ch.IntN(40))
			last := first + int64(ch.IntN(40))
			var r sharestate.Result
			if h.describe(m.key).Code == 0 {
				r = h.send(sharestate.DeadLetteredCmd{Key: m.key, First: first, Last: last}).(sharestate.Result)
				for o := max(first, m.view.StartOffset); o <= last && o < int64(len(m.offsets)); o++ {
					if x := m.at(o); x.state == mArchiving {
						x.state = mArchived
					}
				}
			}
			desc = fmt.Sprintf("dead-lettered %s %d-%d → %s", name(m.key), first, last, codeName(r.Code))
		case op < 88:
			aborted := ch.IntN(4) == 0
			sizes := []int{1 + ch.IntN(5), 1 + ch.IntN(3)}
			if l := h.logOf(m.key); l.end() < 300 {
				l.produce(aborted, sizes...)
			}
			desc = fmt.Sprintf("produce %s %v aborted=%v", name(m.key), sizes, aborted)
		case op < 90:
			// The log's start moves to a batch's first offset.
			l := h.logOf(m.key)
			if i := ch.IntN(len(l.batches)); l.batches[i].First > l.start {
				l.start = l.batches[i].First
			}
			desc = fmt.Sprintf("trim %s %d", name(m.key), l.start)
		default:
			// Acquisitions are written: a crash keeps every one, with
			// its deadline.
			h.restart()
			desc = "restart"
		}
		log = append(log, fmt.Sprintf("%d: %s", step, desc))
		h.lines = nil
		h.check()
		for _, m := range models {
			refresh(m)
		}
	}

	// Every lock expires: no record is lost.
	h.advance(lock + time.Second)
	expire()
	log = append(log, "advance past every lock")
	for _, m := range models {
		refresh(m)
		for o, x := range m.offsets {
			if x.state == mAcquired && int64(o) >= m.view.StartOffset {
				fail("%s offset %d still acquired after every lock expired", name(m.key), o)
			}
		}
	}
	// The host writes every dead letter.
	for _, m := range models {
		if h.describe(m.key).Code != 0 {
			continue
		}
		h.send(sharestate.DeadLetteredCmd{Key: m.key, First: 0, Last: 1 << 20})
		for i := range m.offsets {
			if x := &m.offsets[i]; x.state == mArchiving {
				x.state = mArchived
			}
		}
		refresh(m)
	}
	// A member drains every partition: each record ends accepted once,
	// archived, or gone from the log.
	for _, m := range models {
		l := h.logOf(m.key)
		for round := 0; m.view.Code != 0 || m.view.StartOffset < l.end(); round++ {
			if round > 4*int(l.end())+10 {
				fail("%s: drain stuck at %d of %d", name(m.key), m.view.StartOffset, l.end())
			}
			got := fetch(m, "drain", sharestate.AcquireCmd{MaxRecords: 10}, 0)
			var acks []sharestate.Ack
			for _, r := range h.describe(m.key).Runs {
				if r.Member == "drain" {
					acks = append(acks, sharestate.Ack{First: r.First, Last: r.Last, Types: []sharestate.AckType{sharestate.AckAccept}})
					for o := r.First; o <= r.Last; o++ {
						x := m.at(o)
						x.state, x.member = mAcknowledged, ""
						if x.accepted++; x.accepted > 1 {
							fail("%s offset %d accepted twice", name(m.key), o)
						}
					}
				}
			}
			if len(acks) > 0 {
				if r := h.send(sharestate.AckCmd{Key: m.key, Member: "drain", Acks: acks}).(sharestate.Result); r.Code != 0 {
					fail("%s: drain's ack %s: %s", name(m.key), renderAcks(acks), codeName(r.Code))
				}
			}
			log = append(log, fmt.Sprintf("drain %s → %s", name(m.key), got))
			h.check()
			refresh(m)
		}
		for o := l.start; o < l.end(); o++ {
			if x := m.at(o); x.state != mAcknowledged && x.state != mArchived {
				fail("%s offset %d drained as %v", name(m.key), o, *x)
			}
		}
	}
}

// ackOf picks acknowledgements for member: mostly of what it holds,
// sometimes of what it does not, and says whether the machine must take
// them.
func ackOf(ch chooser, m *model, member string) (sharestate.AckCmd, bool) {
	c := sharestate.AckCmd{Key: m.key, Member: member}
	var held []int64
	for o, x := range m.offsets {
		if x.state == mAcquired && x.member == member {
			held = append(held, int64(o))
		}
	}
	types := []sharestate.AckType{sharestate.AckAccept, sharestate.AckAccept, sharestate.AckRelease, sharestate.AckReject, sharestate.AckGap, sharestate.AckRenew}
	var first, last int64
	if len(held) > 0 && ch.IntN(5) > 0 {
		i := ch.IntN(len(held))
		j := min(len(held)-1, i+ch.IntN(4))
		first, last = held[i], held[j]
	} else {
		first = int64(ch.IntN(len(m.offsets) + 2))
		last = first + int64(ch.IntN(3))
	}
	a := sharestate.Ack{First: first, Last: last}
	if ch.IntN(2) == 0 {
		a.Types = []sharestate.AckType{types[ch.IntN(len(types))]}
	} else {
		for range last - first + 1 {
			a.Types = append(a.Types, types[ch.IntN(len(types))])
		}
	}
	c.Acks = []sharestate.Ack{a}
	// Valid: every offset from the start offset on held by member, and
	// none past the end.
	valid := m.view.Code == 0 && (last < m.view.StartOffset || last < m.view.EndOffset)
	for o := max(first, m.view.StartOffset); valid && o <= last; o++ {
		x := m.at(o)
		valid = x.state == mAcquired && x.member == member
	}
	return c, valid
}

func renderAcks(acks []sharestate.Ack) string {
	var parts []string
	for _, a := range acks {
		var ts []string
		for _, t := range a.Types {
			ts = append(ts, fmt.Sprint(int(t)))
		}
		parts = append(parts, fmt.Sprintf("%s:%s", span(a.First, a.Last), strings.Join(ts, ",")))
	}
	return strings.Join(parts, " ")
}
