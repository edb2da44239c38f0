package sharestate_test

// Scenario tests of the share-state machine, from testdata/*.txt. Each
// block is one command, "----", and what it printed: the records written
// and the answers. Rewrite the expected output after a deliberate change
// with
//
//	go test ./coordinator/sharestate -run TestScenarios -rewrite
//
// and review the diff. The shard's defaults are Kafka's (delivery limit 5,
// lock 30s, 2000 records in flight) unless the file's first command is
// "config limit=N lock=D maxinflight=N snapshot=N partitions=N". Partitions are
// topic/partition of group g, or group:topic/partition. Commands:
//
//	produce P N... [aborted]           the log gets batches of N records (of an aborted transaction)
//	trim P OFFSET                      the log's start moves (retention, DeleteRecords)
//	fetch P MEMBER [max=N] [size=N] [mode=record] [batches=N] [reset=earliest|latest|at:N] [dlq=on]
//	                                   Next, a read of the log from its offset (batches=N at most), Acquire
//	acquire P MEMBER from=N batches=A-B,... [aborted=A-B,...] [max=N] [mode=record]
//	                                   an Acquire of batches the test names (a stale read)
//	ack P MEMBER A-B:TYPE[,TYPE...]... acknowledge: accept, release, reject, gap, renew
//	release MEMBER [P...]              the member leaves: its records are given back
//	advance D                          fake time moves on; lock timers fire
//	restart                            crash: a new machine from the records
//	alter P OFFSET                     AlterShareGroupOffsets
//	delete P                           DeleteShareGroupOffsets
//	dump P                             the partition as DescribeCmd shows it
//	letters                            the partitions with new dead letters (TakeDeadLetters)
//	deadlettered P A-B                 DeadLetteredCmd: their dead letters are written
//
// The one record rule and the machine's invariants are checked after
// every event.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/machinetest"
)

func TestScenarios(t *testing.T) {
	machinetest.Scenarios(t, "testdata/*.txt", func(t *testing.T) func(string) []string {
		var h *harness
		return func(line string) []string {
			if h == nil {
				// A file's first command may configure the shard.
				cfg := sharestate.Config{}
				if strings.HasPrefix(line, "config") {
					cfg = parseConfig(t, line)
				}
				h = newHarness(t, cfg)
			}
			return run(h, line)
		}
	})
}

func parseConfig(t *testing.T, line string) sharestate.Config {
	var cfg sharestate.Config
	_, args := fields(line)
	for k, v := range args {
		n, _ := strconv.Atoi(v)
		switch k {
		case "limit":
			cfg.Limits.DeliveryLimit = int16(n)
		case "lock":
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Limits.LockDuration = d
		case "maxinflight":
			cfg.Limits.MaxInFlight = n
		case "snapshot":
			cfg.SnapshotEvery = n
		case "partitions":
			cfg.MaxPartitions = n
		default:
			t.Fatalf("config %s?", k)
		}
	}
	return cfg
}

// fields splits a command line into positional words and key=value
// arguments.
func fields(line string) (pos []string, args map[string]string) {
	args = map[string]string{}
	for _, w := range strings.Fields(line)[1:] {
		if k, v, ok := strings.Cut(w, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, w)
		}
	}
	return pos, args
}

// part parses a partition name: topic/partition of group g, or
// group:topic/partition.
func part(s string) sharestate.Key {
	if g, tp, ok := strings.Cut(s, ":"); ok {
		return key(g, tp)
	}
	return key("g", s)
}

func run(h *harness, line string) []string {
	h.t.Helper()
	pos, args := fields(line)
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			h.t.Fatalf("%q: %v", line, err)
		}
		return n
	}
	ranges := func(s string) []sharestate.Range {
		var out []sharestate.Range
		for _, r := range strings.Split(s, ",") {
			a, b, ok := strings.Cut(r, "-")
			if !ok {
				b = a
			}
			out = append(out, sharestate.Range{First: num(a), Last: num(b)})
		}
		return out
	}
	acquireArgs := func() sharestate.AcquireCmd {
		c := sharestate.AcquireCmd{MaxRecords: 500}
		if v, ok := args["max"]; ok {
			c.MaxRecords = int(num(v))
		}
		if v, ok := args["size"]; ok {
			c.BatchSize = int(num(v))
		}
		if args["mode"] == "record" {
			c.Mode = sharestate.RecordLimit
		}
		c.Limits.DeadLetter = args["dlq"] == "on"
		return c
	}
	h.lines = nil
	switch cmd := strings.Fields(line)[0]; cmd {
	case "config":
		h.lines = append(h.lines, "(configured)")
	case "produce":
		l := h.logOf(part(pos[0]))
		aborted := false
		var sizes []int
		for _, w := range pos[1:] {
			if w == "aborted" {
				aborted = true
				continue
			}
			sizes = append(sizes, int(num(w)))
		}
		first := l.end()
		l.produce(aborted, sizes...)
		h.lines = append(h.lines, fmt.Sprintf("log %s: %s", pos[0], span(first, l.end()-1)))
	case "trim":
		l := h.logOf(part(pos[0]))
		l.start = num(pos[1])
		h.lines = append(h.lines, fmt.Sprintf("log %s starts at %d", pos[0], l.start))
	case "fetch":
		k := part(pos[0])
		next := sharestate.NextCmd{}
		switch r := args["reset"]; {
		case r == "earliest":
			next.Reset = sharestate.ResetEarliest
		case strings.HasPrefix(r, "at:"):
			next.Reset = sharestate.ResetByDuration
			next.Log.AtTime = num(r[3:])
		}
		maxBatches := 0
		if v, ok := args["batches"]; ok {
			maxBatches = int(num(v))
		}
		h.fetch(k, pos[1], next, acquireArgs(), maxBatches)
	case "acquire":
		c := acquireArgs()
		c.Key, c.Member, c.FetchOffset = part(pos[0]), pos[1], num(args["from"])
		c.Batches = ranges(args["batches"])
		if v, ok := args["aborted"]; ok {
			c.Aborted = ranges(v)
		}
		a := h.send(c).(sharestate.Acquired)
		l := fmt.Sprintf("acquired %s %s: %s", pos[0], pos[1], renderAcquired(a.Records))
		if a.Code != 0 {
			l += " " + codeName(a.Code)
		}
		h.lines = append(h.lines, l)
	case "ack":
		c := sharestate.AckCmd{Key: part(pos[0]), Member: pos[1]}
		for _, w := range pos[2:] {
			r, types, _ := strings.Cut(w, ":")
			rg := ranges(r)[0]
			a := sharestate.Ack{First: rg.First, Last: rg.Last}
			for _, t := range strings.Split(types, ",") {
				a.Types = append(a.Types, ackType(h, t))
			}
			c.Acks = append(c.Acks, a)
		}
		r := h.send(c).(sharestate.Result)
		h.lines = append(h.lines, fmt.Sprintf("ack %s %s: %s", pos[0], pos[1], codeName(r.Code)))
	case "release":
		c := sharestate.ReleaseCmd{Group: "g", Member: pos[0]}
		for _, p := range pos[1:] {
			c.Partitions = append(c.Partitions, part(p))
		}
		r := h.send(c).(sharestate.Result)
		h.lines = append(h.lines, fmt.Sprintf("release %s: %s", pos[0], codeName(r.Code)))
	case "advance":
		d, err := time.ParseDuration(pos[0])
		if err != nil {
			h.t.Fatalf("%q: %v", line, err)
		}
		h.advance(d)
		if len(h.lines) == 0 {
			h.lines = append(h.lines, "(nothing)")
		}
	case "restart":
		h.restart()
		h.lines = append([]string{"restarted"}, h.lines...)
	case "alter":
		r := h.send(sharestate.AlterCmd{Key: part(pos[0]), StartOffset: num(pos[1])}).(sharestate.Result)
		h.lines = append(h.lines, fmt.Sprintf("alter %s: %s", pos[0], codeName(r.Code)))
	case "delete":
		r := h.send(sharestate.DeleteCmd{Key: part(pos[0])}).(sharestate.Result)
		h.lines = append(h.lines, fmt.Sprintf("delete %s: %s", pos[0], codeName(r.Code)))
	case "dump":
		h.lines = append(h.lines, renderRuns(h.describe(part(pos[0])))...)
	case "letters":
		ks := h.m.TakeDeadLetters()
		if len(ks) == 0 {
			h.lines = append(h.lines, "letters: none")
		}
		for _, k := range ks {
			h.lines = append(h.lines, "letters: "+name(k))
		}
	case "deadlettered":
		rg := ranges(pos[1])[0]
		r := h.send(sharestate.DeadLetteredCmd{Key: part(pos[0]), First: rg.First, Last: rg.Last}).(sharestate.Result)
		h.lines = append(h.lines, fmt.Sprintf("deadlettered %s: %s", pos[0], codeName(r.Code)))
	default:
		h.t.Fatalf("unknown command %q", line)
	}
	return h.lines
}

func ackType(h *harness, s string) sharestate.AckType {
	switch s {
	case "gap":
		return sharestate.AckGap
	case "accept":
		return sharestate.AckAccept
	case "release":
		return sharestate.AckRelease
	case "reject":
		return sharestate.AckReject
	case "renew":
		return sharestate.AckRenew
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		h.t.Fatalf("ack type %q", s)
	}
	return sharestate.AckType(n)
}
