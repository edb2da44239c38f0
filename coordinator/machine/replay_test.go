package machine_test

import (
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/coordinator/machine"
)

// tally is a machine with one durable counter; its cheat handler bumps
// the counter without emitting a record, which the guard must catch.
type tally struct {
	n   int
	rec machine.Recorder
}

func newTally() *tally {
	t := &tally{}
	t.rec.Replay = t.Replay
	return t
}

func (t *tally) Replay(r machine.Record) error {
	if r.Value == nil {
		t.n = 0
	} else {
		t.n = int(r.Value[0])
	}
	return nil
}

func (t *tally) DurableState() string { return strings.Repeat("x", t.n) }

func (t *tally) inc()   { t.rec.Emit([]byte("n"), []byte{byte(t.n + 1)}) }
func (t *tally) cheat() { t.n++ }

func TestCheckReplayCatchesAnUnrecordedChange(t *testing.T) {
	live := newTally()
	records := map[string][]byte{}
	step := func(f func()) error {
		f()
		for _, r := range live.rec.Take() {
			records[string(r.Key)] = r.Value
		}
		return machine.CheckReplay(live, records, newTally)
	}
	if err := step(live.inc); err != nil {
		t.Fatalf("an emitted change: %v", err)
	}
	if err := step(live.cheat); err == nil {
		t.Fatal("a change made without a record was not caught")
	} else if !strings.Contains(err.Error(), "- live:") {
		t.Fatalf("the report does not show the live state: %v", err)
	}
}
