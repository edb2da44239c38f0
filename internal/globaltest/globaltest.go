// Package globaltest starts a global unit (coordinator.GlobalUnit) for the tests of
// the packages whose registries are its views (security, quota, kafka),
// which cannot import the whole node.
package globaltest

import (
	"testing"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/memstore"
)

// Start runs the global unit on st (a fresh in-memory store if nil)
// until the test ends.
func Start(t testing.TB, st store.Store) *coordinator.GlobalUnit {
	t.Helper()
	if st == nil {
		st = memstore.New(memstore.Options{})
	}
	h, err := coordinator.StartGlobal(coordinator.GlobalConfig{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}
