package coordinator

import (
	"fmt"

	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
)

// UpgradeGlobal moves the records a version before the global unit kept
// outside every shard (record.LegacyGlobalPrefixes) under the unit's
// prefix, in one atomic batch that also deletes the old keys; with none
// left it writes nothing. It is the runtime's part of opening an older
// data directory or cluster, and runs before the unit loads.
func UpgradeGlobal(st store.Store) error {
	var b store.Batch
	for _, p := range record.LegacyGlobalPrefixes() {
		err := st.Scan(p, func(k, v []byte) error {
			nk, nv, err := record.UpgradeGlobal(k, v)
			if err != nil {
				return err
			}
			b.Put(nk, append([]byte(nil), nv...))
			b.Delete(append([]byte(nil), k...))
			return nil
		})
		if err != nil {
			return fmt.Errorf("global unit: upgrade: %w", err)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	if err := st.Apply(&b); err != nil {
		return fmt.Errorf("global unit: upgrade: %w", err)
	}
	return nil
}
