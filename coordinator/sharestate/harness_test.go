package sharestate_test

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/machinetest"
	"github.com/cohort-dev/cohort/record"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const shard = record.ShareStateShardBase

// tb is what the harness needs of a test.
type tb = machinetest.TB

// fakeLog is a topic partition's log as the host would read it: batches
// of offsets, the log start, the batches of aborted transactions.
type fakeLog struct {
	start   int64
	batches []sharestate.Range
	aborted []sharestate.Range
}

func (l *fakeLog) end() int64 {
	if n := len(l.batches); n > 0 {
		return l.batches[n-1].Last + 1
	}
	return 0
}

// produce appends batches of the sizes given.
func (l *fakeLog) produce(aborted bool, sizes ...int) {
	for _, n := range sizes {
		b := sharestate.Range{First: l.end(), Last: l.end() + int64(n) - 1}
		l.batches = append(l.batches, b)
		if aborted {
			l.aborted = append(l.aborted, b)
		}
	}
}

// read returns at most max batches (0: all) from the one holding from,
// and the aborted ones among them, as a Fetch would.
func (l *fakeLog) read(from int64, max int) (bs, aborted []sharestate.Range) {
	for _, b := range l.batches {
		if b.Last < from || b.Last < l.start {
			continue
		}
		if max > 0 && len(bs) == max {
			break
		}
		bs = append(bs, b)
		for _, a := range l.aborted {
			if a == b {
				aborted = append(aborted, a)
			}
		}
	}
	return bs, aborted
}

// harness runs a sharestate.Shard the way the runtime does, in fake
// time: it keeps the records written (the store), the timers, the
// replies, and a log per partition.
type harness struct {
	t       tb
	cfg     sharestate.Config
	m       *sharestate.Shard
	now     time.Time
	records map[string][]byte
	timers  machinetest.Timers
	logs    map[sharestate.Key]*fakeLog
	nextReq machine.RequestID
	replies map[machine.RequestID]any
	// lines collects what the current step printed.
	lines []string
	// guard runs CheckReplay and Check after every event.
	guard bool
}

func newHarness(t tb, cfg sharestate.Config) *harness {
	cfg.Shard = shard
	h := &harness{
		t: t, cfg: cfg, now: start,
		records: map[string][]byte{},
		timers:  machinetest.Timers{},
		logs:    map[sharestate.Key]*fakeLog{},
		replies: map[machine.RequestID]any{},
		guard:   true,
	}
	h.m = sharestate.New(h.cfg)
	h.apply(h.m.Loaded(h.now))
	return h
}

// key names partition "topic/partition" of group g.
func key(g, tp string) sharestate.Key {
	topic, p, _ := strings.Cut(tp, "/")
	k := sharestate.Key{Group: g}
	copy(k.TopicID[:], topic)
	fmt.Sscan(p, &k.Partition)
	return k
}

func name(k sharestate.Key) string {
	s := fmt.Sprintf("%s/%d", bytes.TrimRight(k.TopicID[:], "\x00"), k.Partition)
	if k.Group != "g" {
		s = k.Group + ":" + s
	}
	return s
}

func (h *harness) logOf(k sharestate.Key) *fakeLog {
	l := h.logs[k]
	if l == nil {
		l = &fakeLog{}
		h.logs[k] = l
	}
	return l
}

// apply takes in an event's output: records to the store, timers,
// replies; then checks the one record rule and the machine's invariants.
func (h *harness) apply(out machine.Output) {
	h.t.Helper()
	for _, r := range out.Records {
		if r.Value == nil {
			delete(h.records, string(r.Key))
		} else {
			h.records[string(r.Key)] = r.Value
		}
		h.lines = append(h.lines, renderRecord(h.t, r))
	}
	h.timers.Apply(out.Timers)
	for _, r := range out.Replies {
		h.replies[r.To] = r.Out
	}
	if h.guard {
		h.check()
	}
}

func (h *harness) check() {
	h.t.Helper()
	if err := machine.CheckReplay(h.m, h.records, func() *sharestate.Shard { return sharestate.New(h.cfg) }); err != nil {
		h.t.Fatalf("one record rule: %v", err)
	}
	if err := h.m.Check(); err != nil {
		h.t.Fatalf("invariant: %v", err)
	}
}

func renderRecord(t tb, r machine.Record) string {
	kind, k, err := record.ParseKey(r.Key)
	if err != nil {
		t.Fatalf("bad key %x: %v", r.Key, err)
	}
	switch kind {
	case record.KindShareSnapshot:
		sk := k.(record.ShareKey)
		n := name(sharestate.Key{Tenant: sk.Tenant, Group: sk.Group, TopicID: sk.TopicID, Partition: sk.Partition})
		if r.Value == nil {
			return "delete " + n + " snapshot"
		}
		v, err := record.DecodeShareSnapshot(r.Value)
		if err != nil {
			t.Fatalf("bad snapshot: %v", err)
		}
		line := fmt.Sprintf("snapshot %s epoch=%d snap=%d start=%d %s", n, v.StateEpoch, v.SnapshotEpoch, v.StartOffset, renderBatches(v.Batches))
		if len(v.Locks) > 0 {
			line += " locks=" + renderLocks(v.Locks)
		}
		return line
	case record.KindShareUpdate:
		uk := k.(record.ShareUpdateKey)
		n := name(sharestate.Key{Tenant: uk.Tenant, Group: uk.Group, TopicID: uk.TopicID, Partition: uk.Partition})
		if r.Value == nil {
			return fmt.Sprintf("delete %s #%d", n, uk.Slot)
		}
		v, err := record.DecodeShareUpdate(r.Value)
		if err != nil {
			t.Fatalf("bad update: %v", err)
		}
		st := "-"
		if v.StartOffset >= 0 {
			st = fmt.Sprint(v.StartOffset)
		}
		line := fmt.Sprintf("update %s #%d snap=%d start=%s %s", n, uk.Slot, v.SnapshotEpoch, st, renderBatches(v.Batches))
		if v.HasLocks {
			line += fmt.Sprintf(" locks %s=%s", span(v.LockFirst, v.LockLast), renderLocks(v.Locks))
		}
		return line
	}
	t.Fatalf("record kind %v", kind)
	return ""
}

// renderLocks renders written locks: offsets, member, delivery count,
// and deadline from the scenario's start.
func renderLocks(ls []record.ShareLock) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%s:%s/%d+%s", span(l.First, l.Last), l.Member, l.DeliveryCount, time.Unix(0, l.Deadline).Sub(start))
		if l.DeadLetter {
			parts[i] += "/dlq"
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func renderBatches(bs []record.ShareBatch) string {
	var parts []string
	for _, b := range bs {
		parts = append(parts, fmt.Sprintf("%s:%s/%d", span(b.First, b.Last), b.State, b.DeliveryCount))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func span(first, last int64) string {
	if first == last {
		return fmt.Sprint(first)
	}
	return fmt.Sprintf("%d-%d", first, last)
}

// send hands the shard a command and returns its answer.
func (h *harness) send(cmd any) any {
	h.t.Helper()
	h.nextReq++
	id := h.nextReq
	h.apply(h.m.Handle(h.now, machine.Request{ID: id, Cmd: cmd}))
	out, ok := h.replies[id]
	if !ok {
		h.t.Fatalf("%T not answered", cmd)
	}
	delete(h.replies, id)
	return out
}

// fetch is what the host does for a ShareFetch of one partition: Next,
// read the log from its offset, Acquire.
func (h *harness) fetch(k sharestate.Key, member string, next sharestate.NextCmd, acq sharestate.AcquireCmd, maxBatches int) (sharestate.Next, sharestate.Acquired) {
	h.t.Helper()
	l := h.logOf(k)
	next.Key = k
	next.Log = sharestate.Log{Start: l.start, Latest: l.end(), AtTime: next.Log.AtTime}
	n := h.send(next).(sharestate.Next)
	line := fmt.Sprintf("next %s: offset %d", name(k), n.Offset)
	if n.Full {
		line += " (full)"
	}
	if n.Code != 0 {
		line += " " + codeName(n.Code)
	}
	h.lines = append(h.lines, line)
	var a sharestate.Acquired
	acq.Key, acq.Member, acq.FetchOffset = k, member, n.Offset
	acq.Batches, acq.Aborted = l.read(n.Offset, maxBatches)
	if n.Code == 0 && !n.Full && len(acq.Batches) > 0 {
		a = h.send(acq).(sharestate.Acquired)
	}
	h.lines = append(h.lines, fmt.Sprintf("acquired %s %s: %s", name(k), member, renderAcquired(a.Records)))
	return n, a
}

// advance moves time on by d, firing the timers that come due, in order.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.timers.Advance(&h.now, d, func(key string) { h.apply(h.m.Fire(h.now, key)) })
}

// restart is a crash: a fresh machine from the records; the timers the
// load arms are its locks'.
func (h *harness) restart() {
	h.t.Helper()
	h.m = sharestate.New(h.cfg)
	if err := machine.ReplaySorted(h.records, h.m.Replay); err != nil {
		h.t.Fatalf("replay: %v", err)
	}
	h.timers = machinetest.Timers{}
	h.apply(h.m.Loaded(h.now))
}

// describe returns partition k as the shard describes it.
func (h *harness) describe(k sharestate.Key) sharestate.Description {
	h.t.Helper()
	return h.send(sharestate.DescribeCmd{Partitions: []sharestate.Key{k}}).([]sharestate.Description)[0]
}

var codeName = machinetest.CodeName

func renderAcquired(rs []sharestate.Records) string {
	if len(rs) == 0 {
		return "none"
	}
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s/%d", span(r.First, r.Last), r.DeliveryCount))
	}
	return strings.Join(parts, " ")
}

func renderRuns(d sharestate.Description) []string {
	if d.Code != 0 {
		return []string{fmt.Sprintf("%s: %s", name(d.Key), codeName(d.Code))}
	}
	out := []string{fmt.Sprintf("%s start=%d end=%d epoch=%d", name(d.Key), d.StartOffset, d.EndOffset, d.StateEpoch)}
	for _, r := range d.Runs {
		l := fmt.Sprintf("  %s %s/%d", span(r.First, r.Last), r.State, r.DeliveryCount)
		if r.Member != "" {
			l += fmt.Sprintf(" %s until +%s", r.Member, r.Deadline.Sub(start))
		}
		out = append(out, l)
	}
	return out
}
