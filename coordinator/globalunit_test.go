package coordinator_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/memstore"
)

func startUnit(t *testing.T, st store.Store, shared bool) *coordinator.GlobalUnit {
	t.Helper()
	h, err := coordinator.StartGlobal(coordinator.GlobalConfig{Store: st, Shared: shared})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// TestViewsHaveWhatWasAcknowledged: on one node, a command's effect is in
// the snapshot the views get before Do returns, and survives a restart.
func TestGlobalViewsHaveWhatWasAcknowledged(t *testing.T) {
	st := memstore.New(memstore.Options{})
	h := startUnit(t, st, false)
	var seen *global.Snapshot
	h.Subscribe(func(s *global.Snapshot) { seen = s })
	if _, err := h.Do(context.Background(), global.CreateOrg{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := seen.Orgs["acme"]; !ok {
		t.Fatal("Do returned before the views had the organisation")
	}
	if _, err := h.Do(context.Background(), global.CreateOrg{Name: "acme"}); !errors.Is(err, global.ErrOrgExists) {
		t.Fatalf("second create: %v", err)
	}
	h.Close()
	if _, ok := startUnit(t, st, false).Snapshot().Orgs["acme"]; !ok {
		t.Fatal("a restarted unit lost the organisation")
	}
}

// TestSharedWritersFenceEachOther: two nodes of a cluster write the same
// unit. Each write acquires the unit afresh, so a node decides on what
// the other wrote (its "exists" is true), and the other's view follows
// with Refresh.
func TestGlobalSharedWritersFenceEachOther(t *testing.T) {
	st := memstore.New(memstore.Options{})
	a, b := startUnit(t, st, true), startUnit(t, st, true)
	ctx := context.Background()
	if _, err := a.Do(ctx, global.CreateOrg{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	// b has not refreshed: its view lacks acme, yet its write sees it.
	if _, ok := b.Snapshot().Orgs["acme"]; ok {
		t.Fatal("b's view has acme before any refresh: the test proves nothing")
	}
	if _, err := b.Do(ctx, global.CreateOrg{Name: "acme"}); !errors.Is(err, global.ErrOrgExists) {
		t.Fatalf("b created acme again: %v", err)
	}
	if _, err := b.Do(ctx, global.SetMember{Org: "acme", Principal: "User:x"}); err != nil {
		t.Fatal(err)
	}
	// a wrote last before b: a's next write must see b's member.
	if _, err := a.Do(ctx, global.DeleteOrg{Name: "acme"}); !errors.Is(err, global.ErrOrgNotEmpty) {
		t.Fatalf("a deleted an organisation b put a member in: %v", err)
	}
	if err := a.Refresh(); err != nil {
		t.Fatal(err)
	}
	if got := a.Snapshot().Members["User:x"]; got != "acme" {
		t.Fatalf("a's view after Refresh: member in %q", got)
	}
}

// TestUpgradeMovesLegacyRecords: records an older version kept under
// their own namespace bytes move under the unit, and the old keys go.
func TestGlobalUpgradeMovesLegacyRecords(t *testing.T) {
	st := memstore.New(memstore.Options{})
	legacyOrg := append([]byte{'o', byte(record.KindOrg)}, record.OrgKey("acme")[len(record.OrgPrefix()):]...)
	var b store.Batch
	b.Put(legacyOrg, record.Org{CreatedMs: 7}.Encode())
	if err := st.Apply(&b); err != nil {
		t.Fatal(err)
	}
	h := startUnit(t, st, false)
	if got, ok := h.Snapshot().Orgs["acme"]; !ok || got.CreatedMs != 7 {
		t.Fatalf("upgraded organisation: %+v %v", got, ok)
	}
	if _, err := st.Get(legacyOrg); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the legacy key stays: %v", err)
	}
}
