// Package globaltest starts a global unit (globalhost) for the tests of
// the packages whose registries are its views (security, quota, kafka),
// which cannot import the whole node.
package globaltest

import (
	"testing"

	"github.com/cohort-dev/cohort/globalhost"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/memstore"
)

// Start runs the global unit on st (a fresh in-memory store if nil)
// until the test ends.
func Start(t testing.TB, st store.Store) *globalhost.Host {
	t.Helper()
	if st == nil {
		st = memstore.New(memstore.Options{})
	}
	h, err := globalhost.Start(globalhost.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}
