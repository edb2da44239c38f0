package machine

import (
	"fmt"
	"slices"
	"strings"
)

// ReplaySorted hands every record of records (key → value) to replay in
// key order, as a shard load does: how the test harnesses of the pure
// machines restart a machine from what it wrote, and how the runtime's
// invariant check rebuilds one.
func ReplaySorted(records map[string][]byte, replay func(Record) error) error {
	keys := make([]string, 0, len(records))
	for k := range records {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := replay(Record{Key: []byte(k), Value: records[k]}); err != nil {
			return fmt.Errorf("replay %x: %w", k, err)
		}
	}
	return nil
}

// CheckReplay is the guard of the one record rule (see the package doc):
// it rebuilds a machine from records (key → value, as a shard load sees
// them) and reports how its durable state differs from live's. A
// difference means a handler changed durable state without emitting the
// record that says so.
func CheckReplay[M interface {
	Replay(Record) error
	Durable
}](live Durable, records map[string][]byte, fresh func() M) error {
	m := fresh()
	if err := ReplaySorted(records, m.Replay); err != nil {
		return err
	}
	want, got := live.DurableState(), m.DurableState()
	if want == got {
		return nil
	}
	return fmt.Errorf("durable state rebuilt from the records differs from the live machine's:\n%s", lineDiff(want, got))
}

// lineDiff lists the lines only in a (-, live) and only in b (+, rebuilt).
func lineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(b, "\n") {
		count[l]++
	}
	var out strings.Builder
	for _, l := range strings.Split(a, "\n") {
		if count[l] > 0 {
			count[l]--
			continue
		}
		out.WriteString("- live:    " + l + "\n")
	}
	for _, l := range strings.Split(b, "\n") {
		if count[l] > 0 {
			count[l]--
			out.WriteString("+ rebuilt: " + l + "\n")
		}
	}
	return out.String()
}
