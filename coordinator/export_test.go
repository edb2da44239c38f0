package coordinator

import "github.com/cohort-dev/cohort/coordinator/groups"

// Invariants hands the runtime's invariant checks (invariants.go) to the
// tests, which drive them by hand whatever the build tags.
type Invariants struct{ c *invariants }

func NewInvariants(shard uint16, fresh func() Machine) Invariants {
	return Invariants{newInvariants(shard, fresh)}
}

func (i Invariants) Loaded(k, v []byte)                   { i.c.loaded(k, v) }
func (i Invariants) Event(m Machine, recs []Record) error { return i.c.event(m, recs) }
func (i Invariants) Closing(m Machine) error              { return i.c.closing(m) }

// ForgetInspected makes the next Inspect read every shard in full, as
// the first does.
func (c *Coordinator) ForgetInspected() {
	c.inspectMu.Lock()
	defer c.inspectMu.Unlock()
	c.inspected, c.reading = nil, nil
}

// MergeSummaries is mergeSummaries, for its test.
var MergeSummaries = mergeSummaries

// MergeRuns is mergeRuns of runs each a shard's answer, for its test.
func MergeRuns(runs [][]groups.Summary) []groups.Summary {
	var answers []inspectAnswer
	for i, r := range runs {
		answers = append(answers, inspectAnswer{shard: uint16(i), d: groups.InspectDelta{Changed: r}})
	}
	return mergeRuns(answers)
}
