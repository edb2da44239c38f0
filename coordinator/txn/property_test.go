package txn_test

// A property test: many transactional producers (two clients per
// transactional id, so that they fence each other) send random requests;
// the host completes markers in random order, time moves, the shard
// crashes and reloads. After every step:
//
//   - epochs never go back: a transactional id's records have a
//     non-decreasing (producer id, epoch), the id changing only when the
//     epoch is exhausted;
//   - every record follows an edge of Kafka's state diagram;
//   - atomicity: the markers of a transaction name exactly the
//     partitions and groups whose additions were acknowledged in it, and
//     commit markers come only from the client's EndTxn commit;
//   - an EndTxn commit answered NONE had its markers completed before;
//   - the one record rule (the harness).

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/cohort-dev/cohort/internal/machinetest"
	"github.com/cohort-dev/cohort/record"
)

// propTB stops a schedule at the first broken invariant.
type propTB = machinetest.Panicking

func TestProperty(t *testing.T) {
	schedules := 300
	if testing.Short() {
		schedules = 50
	}
	for i := range schedules {
		seed := uint64(i) + 1
		if msg, trace := runSchedule(seed, 400); msg != "" {
			t.Fatalf("seed %d: %s\nlast steps:\n%s", seed, msg, trace)
		}
	}
}

// client is what one producer believes.
type client struct {
	id    string
	pid   int64
	epoch int16
	known bool
}

// model is what the property knows of one transactional id's current
// transaction, from acknowledged answers.
type model struct {
	parts  []txn.TP
	groups []string
	// committing is set when a client's EndTxn commit was accepted for
	// the transaction in progress.
	committing bool
}

func runSchedule(seed uint64, steps int) (msg string, trace string) {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	var log []string
	return machinetest.Catch(func() { schedule(rng, steps, &log) }, &log, 20)
}

// schedule runs the steps, appending each to log; a broken invariant
// panics (machinetest.Panicking).
func schedule(rng *rand.Rand, steps int, logp *[]string) {
	log := *logp
	defer func() { *logp = log }()
	h := newHarness(machinetest.Panicking{})
	h.guard = false
	ids := []string{"a", "b", "c", "d", "e", "f"}
	clients := make([]*client, 0, 2*len(ids))
	for _, id := range ids {
		clients = append(clients, &client{id: id}, &client{id: id})
	}
	models := map[string]*model{}
	for _, id := range ids {
		models[id] = &model{}
	}
	last := map[string]record.Txn{}
	// committed[id] counts commit markers completed; pendingCommit maps
	// an EndTxn commit request to the count it must exceed.
	completedCommits := map[string]int{}
	endCommits := map[machine.RequestID][2]any{}
	parts := []txn.TP{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "u", Partition: 0}}

	checkRecords := func() {
		for _, id := range ids {
			r, ok := h.state(id)
			prev, had := last[id]
			if !ok {
				delete(last, id)
				continue
			}
			if had && !reflect.DeepEqual(r, prev) {
				if r.ProducerID == prev.ProducerID && r.ProducerEpoch < prev.ProducerEpoch {
					propTB{}.Fatalf("%s: epoch went back %d → %d", id, prev.ProducerEpoch, r.ProducerEpoch)
				}
				if r.ProducerID != prev.ProducerID && prev.ProducerEpoch < 32766 && r.PrevProducerID != prev.ProducerID {
					propTB{}.Fatalf("%s: producer id changed %d → %d with epoch %d", id, prev.ProducerID, r.ProducerID, prev.ProducerEpoch)
				}
				if !allowed(prev.State, r.State) {
					propTB{}.Fatalf("%s: transition %s → %s", id, prev.State, r.State)
				}
			}
			last[id] = r
		}
	}
	// checkMarkers checks new Markers pushes (not a load's, which
	// pushes again those of prepared transactions) against the model.
	checkMarkers := func(ms []txn.Markers) {
		for _, m := range ms {
			md := models[m.TxnID]
			if !slices.Equal(m.Partitions, md.parts) || !slices.Equal(m.Groups, md.groups) {
				propTB{}.Fatalf("%s: markers for %v %v, acknowledged %v %v", m.TxnID, m.Partitions, m.Groups, md.parts, md.groups)
			}
			if m.Commit && !md.committing {
				propTB{}.Fatalf("%s: commit markers without a commit", m.TxnID)
			}
			*md = model{}
		}
	}

	for step := range steps {
		pendingBefore := len(h.pending)
		c := clients[rng.IntN(len(clients))]
		var desc string
		switch op := rng.IntN(100); {
		case op < 12 || !c.known:
			id := h.send(txn.InitCmd{TxnID: c.id, TimeoutMs: int32(rng.IntN(20)+1) * 1000, ProducerID: -1, ProducerEpoch: -1, NewProducerID: h.newPID()})
			r, _ := h.result(id)
			desc = fmt.Sprintf("init %s → %s", c.id, codeName(r.Code))
			if r.Code == 0 {
				c.pid, c.epoch, c.known = r.ProducerID, r.ProducerEpoch, true
			}
		case op < 40:
			p := parts[rng.IntN(len(parts))]
			id := h.send(txn.AddPartitionsCmd{TxnID: c.id, ProducerID: c.pid, ProducerEpoch: c.epoch, Partitions: []txn.TP{p}})
			r, _ := h.result(id)
			desc = fmt.Sprintf("add %s %d/%d %v → %s", c.id, c.pid, c.epoch, p, codeName(r.Code))
			if r.Code == 0 {
				md := models[c.id]
				if !slices.Contains(md.parts, p) {
					md.parts = append(md.parts, p)
					slices.SortFunc(md.parts, func(a, b txn.TP) int {
						if a.Topic != b.Topic {
							if a.Topic < b.Topic {
								return -1
							}
							return 1
						}
						return int(a.Partition - b.Partition)
					})
				}
			}
		case op < 50:
			g := []string{"g1", "g2"}[rng.IntN(2)]
			id := h.send(txn.AddGroupCmd{TxnID: c.id, ProducerID: c.pid, ProducerEpoch: c.epoch, Group: g})
			r, _ := h.result(id)
			desc = fmt.Sprintf("group %s %s → %s", c.id, g, codeName(r.Code))
			if r.Code == 0 {
				md := models[c.id]
				if !slices.Contains(md.groups, g) {
					md.groups = append(md.groups, g)
					slices.Sort(md.groups)
				}
			}
		case op < 65:
			commit := rng.IntN(3) > 0
			st, _ := h.state(c.id)
			willPrepare := st.State == record.TxnOngoing && st.ProducerID == c.pid && st.ProducerEpoch == c.epoch
			if willPrepare && commit {
				models[c.id].committing = true
			}
			id := h.send(txn.EndCmd{TxnID: c.id, ProducerID: c.pid, ProducerEpoch: c.epoch, Commit: commit})
			desc = fmt.Sprintf("end %s %d/%d commit=%v", c.id, c.pid, c.epoch, commit)
			if commit {
				endCommits[id] = [2]any{c.id, completedCommits[c.id]}
			}
		case op < 85:
			// The host completes one pending Markers.
			if len(h.pending) > 0 {
				i := rng.IntN(len(h.pending))
				m := h.pending[i]
				h.pending = slices.Delete(h.pending, i, i+1)
				if m.Commit {
					if st, _ := h.state(m.TxnID); st.State == record.TxnPrepareCommit && st.ProducerEpoch == m.ProducerEpoch {
						completedCommits[m.TxnID]++
					}
				}
				h.send(m.Complete())
				desc = "complete " + renderMarkers(m)
			}
		case op < 95:
			d := time.Duration(rng.IntN(8000)) * time.Millisecond
			h.advance(d)
			desc = "advance " + d.String()
		default:
			h.restart()
			desc = "restart"
		}
		log = append(log, fmt.Sprintf("%d: %s", step, desc))
		if len(h.pending) > pendingBefore && desc != "restart" {
			checkMarkers(h.pending[pendingBefore:])
		}
		checkRecords()
		for id, want := range endCommits {
			out, ok := h.replies[id]
			if !ok {
				continue
			}
			delete(endCommits, id)
			st, _ := h.state(want[0].(string))
			if r, _ := out.(txn.Result); out != nil && r.Code == 0 && (completedCommits[want[0].(string)] == 0 || st.State != record.TxnCompleteCommit) {
				propTB{}.Fatalf("EndTxn commit #%d of %s answered NONE before its markers completed", id, want[0])
			}
		}
		if step%16 == 0 || step == steps-1 {
			if err := checkReplay(h); err != nil {
				propTB{}.Fatalf("%v", err)
			}
		}
	}
}

func checkReplay(h *harness) error {
	fresh := txn.New(h.cfg)
	if err := replayAll(h.records, fresh); err != nil {
		return err
	}
	if a, b := h.m.DurableState(), fresh.DurableState(); a != b {
		return fmt.Errorf("live and replayed differ:\n%s\n%s", a, b)
	}
	return nil
}

func replayAll(records map[string][]byte, m *txn.Shard) error {
	for _, k := range sortedKeys(records) {
		if err := m.Replay(machine.Record{Key: []byte(k), Value: records[k]}); err != nil {
			return err
		}
	}
	return nil
}

// allowed is Kafka's TransactionState valid previous states, plus
// Cohort's bumped empty abort (Complete* or Empty → CompleteAbort).
func allowed(from, to record.TxnState) bool {
	if from == to {
		return to == record.TxnOngoing || to == record.TxnEmpty || to == record.TxnCompleteAbort || to == record.TxnCompleteCommit
	}
	switch to {
	case record.TxnEmpty:
		return from == record.TxnCompleteCommit || from == record.TxnCompleteAbort
	case record.TxnOngoing:
		return from == record.TxnEmpty || from == record.TxnCompleteCommit || from == record.TxnCompleteAbort
	case record.TxnPrepareCommit, record.TxnPrepareAbort:
		return from == record.TxnOngoing
	case record.TxnCompleteCommit:
		return from == record.TxnPrepareCommit
	case record.TxnCompleteAbort:
		return from == record.TxnPrepareAbort || from == record.TxnEmpty || from == record.TxnCompleteCommit
	}
	return false
}
