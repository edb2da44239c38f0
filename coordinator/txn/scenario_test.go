package txn_test

// Scenario tests of the transaction machine, from testdata/*.txt. Each
// block is one command, "----", and what it printed: the records written,
// the Markers pushed and the answers of the requests it settled. Rewrite
// the expected output after a deliberate change with
//
//	go test ./coordinator/txn -run TestScenarios -rewrite
//
// and review the diff. Commands:
//
//	init ID [timeout=60s] [pid=N epoch=E]   InitProducerId
//	add ID PID EPOCH t/0 ... [verify]         AddPartitionsToTxn
//	group ID PID EPOCH G                      AddOffsetsToTxn
//	end ID PID EPOCH commit|abort [bump]      EndTxn (bump: v5, KIP-890)
//	markers                                   the host completes every Markers push
//	advance D                                 fake time moves on; timers fire
//	restart                                   crash: a new machine from the records
//	load ID pid=N epoch=E                     an Empty record in the store, then restart
//	describe ID...                            DescribeTransactions
//	list [state=S] [pid=N] [min=D]            ListTransactions
//
// The one record rule is checked after every event.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/cohort-dev/cohort/internal/machinetest"
	"github.com/cohort-dev/cohort/record"
)

func TestScenarios(t *testing.T) {
	machinetest.Scenarios(t, "testdata/*.txt", func(t *testing.T) func(string) []string {
		h := newHarness(t)
		return func(line string) []string { return run(h, line) }
	})
}

func run(h *harness, line string) []string {
	h.t.Helper()
	f := strings.Fields(line)
	args := map[string]string{}
	var pos []string
	for _, w := range f[1:] {
		if k, v, ok := strings.Cut(w, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, w)
		}
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			h.t.Fatalf("%q: %v", line, err)
		}
		return n
	}
	dur := func(s string) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			h.t.Fatalf("%q: %v", line, err)
		}
		return d
	}
	h.log = nil
	var ids []machine.RequestID
	switch f[0] {
	case "init":
		c := txn.InitCmd{TxnID: pos[0], TimeoutMs: 60000, ProducerID: -1, ProducerEpoch: -1, NewProducerID: h.newPID()}
		if v, ok := args["timeout"]; ok {
			c.TimeoutMs = int32(dur(v).Milliseconds())
		}
		if v, ok := args["pid"]; ok {
			c.ProducerID, c.ProducerEpoch = num(v), int16(num(args["epoch"]))
		}
		ids = append(ids, h.send(c))
	case "add":
		c := txn.AddPartitionsCmd{TxnID: pos[0], ProducerID: num(pos[1]), ProducerEpoch: int16(num(pos[2]))}
		for _, w := range pos[3:] {
			if w == "verify" {
				c.VerifyOnly = true
				continue
			}
			tp, p, _ := strings.Cut(w, "/")
			c.Partitions = append(c.Partitions, txn.TP{Topic: tp, Partition: int32(num(p))})
		}
		ids = append(ids, h.send(c))
	case "group":
		ids = append(ids, h.send(txn.AddGroupCmd{TxnID: pos[0], ProducerID: num(pos[1]), ProducerEpoch: int16(num(pos[2])), Group: pos[3]}))
	case "end":
		c := txn.EndCmd{TxnID: pos[0], ProducerID: num(pos[1]), ProducerEpoch: int16(num(pos[2])), Commit: pos[3] == "commit", NewProducerID: h.newPID()}
		c.Bump = len(pos) > 4 && pos[4] == "bump"
		ids = append(ids, h.send(c))
	case "markers":
		before := h.nextReq
		h.completeMarkers()
		for id := before + 1; id <= h.nextReq; id++ {
			delete(h.replies, id) // the completions' own nil answers
		}
	case "advance":
		h.advance(dur(pos[0]))
	case "restart":
		// open=topic/partition:pid/epoch,...: what the log holds open,
		// the batches of adds the crash may have lost (txn.Config.Open).
		h.cfg.Open = nil
		if v, ok := args["open"]; ok {
			for _, o := range strings.Split(v, ",") {
				tp, pe, _ := strings.Cut(o, ":")
				topic, part, _ := strings.Cut(tp, "/")
				pid, epoch, _ := strings.Cut(pe, "/")
				h.cfg.Open = append(h.cfg.Open, txn.OpenTxn{Partition: txn.TP{Topic: topic, Partition: int32(num(part))}, ProducerID: num(pid), ProducerEpoch: int16(num(epoch))})
			}
		}
		// marked=topic/partition:pid/epoch:commit|abort,...: each
		// producer's last marker in the log (txn.Config.Marked).
		h.cfg.Marked = nil
		if v, ok := args["marked"]; ok {
			for _, m := range strings.Split(v, ",") {
				parts := strings.Split(m, ":")
				topic, part, _ := strings.Cut(parts[0], "/")
				pid, epoch, _ := strings.Cut(parts[1], "/")
				h.cfg.Marked = append(h.cfg.Marked, txn.Marked{Partition: txn.TP{Topic: topic, Partition: int32(num(part))}, ProducerID: num(pid), ProducerEpoch: int16(num(epoch)), Commit: parts[2] == "commit"})
			}
		}
		h.restart()
		h.cfg.Open, h.cfg.Marked = nil, nil
		h.log = append([]string{"restarted"}, h.log...)
	case "load":
		// A transactional id loaded at a given producer id and epoch
		// (an exhausted epoch takes 32k transactions to reach).
		r := record.Txn{ProducerID: num(args["pid"]), PrevProducerID: -1, ProducerEpoch: int16(num(args["epoch"])), LastProducerEpoch: -1,
			TimeoutMs: 60000, State: record.TxnEmpty, UpdateTimestamp: h.now.UnixMilli()}
		h.records[string(record.TxnKey{Shard: shard, TxnID: pos[0]}.Key())] = r.Encode()
		h.restart()
		h.log = append([]string{"loaded " + pos[0] + " " + renderTxn(r)}, h.log...)
	case "describe":
		id := h.send(txn.DescribeCmd{TxnIDs: pos})
		for _, d := range h.replies[id].([]txn.Description) {
			h.log = append(h.log, fmt.Sprintf("describe %s: %s state=%s pid=%d/%d timeout=%d start=%s parts=%v",
				d.TxnID, codeName(d.Code), d.State, d.ProducerID, d.ProducerEpoch, d.TimeoutMs, since(d.StartMs), d.Partitions))
		}
		delete(h.replies, id)
	case "list":
		c := txn.ListCmd{}
		if v, ok := args["state"]; ok {
			c.States = strings.Split(v, ",")
		}
		if v, ok := args["pid"]; ok {
			c.ProducerIDs = []int64{num(v)}
		}
		if v, ok := args["min"]; ok {
			c.MinDurationMs = dur(v).Milliseconds()
		}
		id := h.send(c)
		for _, l := range h.replies[id].([]txn.Listing) {
			h.log = append(h.log, fmt.Sprintf("list %s pid=%d %s", l.TxnID, l.ProducerID, l.State))
		}
		delete(h.replies, id)
	default:
		h.t.Fatalf("unknown command %q", line)
	}
	// Answers: of this step's requests, and of any parked earlier that
	// this step settled.
	for _, id := range sortedIDs(h.replies) {
		out := h.replies[id]
		delete(h.replies, id)
		if out == nil {
			h.log = append(h.log, fmt.Sprintf("#%d: failed (restart)", id))
			continue
		}
		r := out.(txn.Result)
		h.log = append(h.log, fmt.Sprintf("#%d: %s pid=%d epoch=%d", id, codeName(r.Code), r.ProducerID, r.ProducerEpoch))
	}
	for _, id := range ids {
		if h.parked[id] {
			h.log = append(h.log, fmt.Sprintf("#%d: parked", id))
		}
	}
	if len(h.log) == 0 {
		return []string{"(nothing)"}
	}
	return h.log
}

func since(ms int64) string {
	if ms < 0 {
		return "-"
	}
	return time.UnixMilli(ms).Sub(start).String()
}

func sortedIDs(m map[machine.RequestID]any) []machine.RequestID {
	var out []machine.RequestID
	for id := range m {
		out = append(out, id)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
