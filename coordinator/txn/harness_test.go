package txn_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/cohort-dev/cohort/internal/machinetest"
	"github.com/cohort-dev/cohort/record"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const shard = record.TxnShardBase

// tb is what the harness needs of a test.
type tb = machinetest.TB

// harness runs a txn.Shard the way the runtime does, in fake time: it
// keeps the records written (the store), the timers, and the Markers
// pushes not yet completed (the host's work).
type harness struct {
	t       tb
	cfg     txn.Config
	m       *txn.Shard
	now     time.Time
	records map[string][]byte
	timers  machinetest.Timers
	pending []txn.Markers
	nextReq machine.RequestID
	nextPID int64
	// replies by request id, and the ids still parked.
	replies map[machine.RequestID]any
	parked  map[machine.RequestID]bool
	// log collects the lines of the current step.
	log []string
	// guard runs CheckReplay after every event.
	guard bool
}

func newHarness(t tb) *harness {
	h := &harness{
		t:       t,
		cfg:     txn.Config{Shard: shard, MaxTimeout: 15 * time.Minute, IDExpiration: 24 * time.Hour, ExpirationCheck: time.Hour},
		now:     start,
		records: map[string][]byte{},
		timers:  machinetest.Timers{},
		nextPID: 1000,
		replies: map[machine.RequestID]any{},
		parked:  map[machine.RequestID]bool{},
		guard:   true,
	}
	h.m = txn.New(h.cfg)
	h.apply(h.m.Loaded(h.now))
	return h
}

// apply takes in an event's output: records to the store, timers,
// pushes, replies; then checks the one record rule.
func (h *harness) apply(out machine.Output) {
	h.t.Helper()
	for _, r := range out.Records {
		_, key, err := record.ParseKey(r.Key)
		if err != nil {
			h.t.Fatalf("bad key %x: %v", r.Key, err)
		}
		id := key.(record.TxnKey).TxnID
		if r.Value == nil {
			delete(h.records, string(r.Key))
			h.log = append(h.log, "delete "+id)
			continue
		}
		h.records[string(r.Key)] = r.Value
		v, err := record.DecodeTxn(r.Value)
		if err != nil {
			h.t.Fatalf("bad value: %v", err)
		}
		h.log = append(h.log, "write "+id+" "+renderTxn(v))
	}
	h.timers.Apply(out.Timers)
	for _, p := range out.Pushes {
		m := p.Msg.(txn.Markers)
		h.pending = append(h.pending, m)
		line := "markers " + renderMarkers(m)
		if p.Early {
			line += " (early)"
		}
		h.log = append(h.log, line)
	}
	for _, r := range out.Replies {
		h.replies[r.To] = r.Out
		delete(h.parked, r.To)
	}
	if h.guard {
		if err := machine.CheckReplay(h.m, h.records, func() *txn.Shard { return txn.New(h.cfg) }); err != nil {
			h.t.Fatalf("one record rule: %v", err)
		}
	}
}

func renderTxn(r record.Txn) string {
	var ps []string
	for _, p := range r.Partitions {
		ps = append(ps, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
	}
	s := fmt.Sprintf("%s pid=%d/%d", r.State, r.ProducerID, r.ProducerEpoch)
	if r.PrevProducerID >= 0 {
		s += fmt.Sprintf(" prev=%d", r.PrevProducerID)
	}
	if len(ps) > 0 {
		s += " parts=[" + strings.Join(ps, " ") + "]"
	}
	if len(r.Groups) > 0 {
		s += " groups=[" + strings.Join(r.Groups, " ") + "]"
	}
	if r.Bumped {
		s += " bumped"
	}
	return s
}

func renderMarkers(m txn.Markers) string {
	var ps []string
	for _, p := range m.Partitions {
		ps = append(ps, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
	}
	what := "abort"
	if m.Commit {
		what = "commit"
	}
	return fmt.Sprintf("%s %s pid=%d/%d parts=[%s] groups=[%s]", m.TxnID, what, m.ProducerID, m.ProducerEpoch, strings.Join(ps, " "), strings.Join(m.Groups, " "))
}

// send hands the shard a command and returns its request id.
func (h *harness) send(cmd any) machine.RequestID {
	h.t.Helper()
	h.nextReq++
	id := h.nextReq
	h.parked[id] = true
	h.apply(h.m.Handle(h.now, machine.Request{ID: id, Cmd: cmd}))
	return id
}

// result is the answer to request id, or ok=false while it is parked.
func (h *harness) result(id machine.RequestID) (txn.Result, bool) {
	out, ok := h.replies[id]
	if !ok {
		return txn.Result{}, false
	}
	r, _ := out.(txn.Result)
	return r, true
}

func (h *harness) newPID() int64 {
	h.nextPID++
	return h.nextPID
}

// completeMarkers plays the host: every pending Markers is done.
func (h *harness) completeMarkers() {
	h.t.Helper()
	for len(h.pending) > 0 {
		m := h.pending[0]
		h.pending = h.pending[1:]
		h.send(m.Complete())
	}
}

// advance moves time on by d, firing the timers that come due, in order.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.timers.Advance(&h.now, d, func(key string) { h.apply(h.m.Fire(h.now, key)) })
}

// restart is a crash: a fresh machine from the records; pushes not yet
// completed are lost (the load pushes them again), parked requests are
// failed.
func (h *harness) restart() {
	h.t.Helper()
	h.m = txn.New(h.cfg)
	if err := machine.ReplaySorted(h.records, h.m.Replay); err != nil {
		h.t.Fatalf("replay: %v", err)
	}
	h.timers = machinetest.Timers{}
	h.pending = nil
	for id := range h.parked {
		h.replies[id] = nil
		delete(h.parked, id)
	}
	h.apply(h.m.Loaded(h.now))
}

// state returns the record of txnID, ok=false if there is none.
func (h *harness) state(id string) (record.Txn, bool) {
	v, ok := h.records[string(record.TxnKey{Shard: shard, TxnID: id}.Key())]
	if !ok {
		return record.Txn{}, false
	}
	r, err := record.DecodeTxn(v)
	if err != nil {
		h.t.Fatalf("decode: %v", err)
	}
	return r, true
}

var codeName = machinetest.CodeName

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var _ = slices.Sort[[]string]
