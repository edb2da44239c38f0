package testkit

import (
	"fmt"
	"slices"

	"github.com/cohort-dev/cohort/coordinator/machine"
)

// ReplaySorted hands every record of records (key → value) to replay in
// key order, as a shard load does: how the pure machines' test harnesses
// restart a machine from what it wrote.
func ReplaySorted(records map[string][]byte, replay func(machine.Record) error) error {
	keys := make([]string, 0, len(records))
	for k := range records {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := replay(machine.Record{Key: []byte(k), Value: records[k]}); err != nil {
			return fmt.Errorf("replay %x: %w", k, err)
		}
	}
	return nil
}
