package security

import (
	"errors"
	"testing"

	"github.com/cohort-dev/cohort/internal/globaltest"
	"github.com/cohort-dev/cohort/store/memstore"
)

func TestOrgs(t *testing.T) {
	st := memstore.New(memstore.Options{})
	u := globaltest.Start(t, st)
	o, err := NewOrgs(u)
	if err != nil {
		t.Fatal(err)
	}
	alice := User("alice")
	if got := o.TenantOf(alice); got != "" {
		t.Fatalf("unmapped principal in %q, want the default tenant", got)
	}
	for _, bad := range []string{"", "default", "Acme", "-x", "a/b", string(make([]byte, 64))} {
		if err := o.Create(bad); err == nil {
			t.Errorf("Create(%q) accepted", bad)
		}
	}
	if err := o.SetMember("acme", "User:alice"); !errors.Is(err, ErrOrgNotFound) {
		t.Fatalf("member of a missing org: %v", err)
	}
	if err := o.Create("acme"); err != nil {
		t.Fatal(err)
	}
	if err := o.Create("acme"); !errors.Is(err, ErrOrgExists) {
		t.Fatalf("second create: %v", err)
	}
	if err := o.SetMember("acme", "User:alice"); err != nil {
		t.Fatal(err)
	}
	if got := o.TenantOf(alice); got != "acme" {
		t.Fatalf("alice in %q, want acme", got)
	}
	if err := o.Delete("acme"); !errors.Is(err, ErrOrgNotEmpty) {
		t.Fatalf("delete with members: %v", err)
	}
	// A second registry of a unit that loads the store again (a
	// restart) sees it all.
	u.Close()
	u = globaltest.Start(t, st)
	o, err = NewOrgs(u)
	if err != nil {
		t.Fatal(err)
	}
	o2, err := NewOrgs(u)
	if err != nil {
		t.Fatal(err)
	}
	list := o2.List()
	if len(list) != 2 || list[0].Name != DefaultOrg || list[1].Name != "acme" || len(list[1].Members) != 1 || list[1].Members[0] != "User:alice" || list[1].Created.IsZero() {
		t.Fatalf("list: %+v", list)
	}
	if err := o.SetMember(DefaultOrg, "User:alice"); err != nil {
		t.Fatal(err)
	}
	if got := o.TenantOf(alice); got != "" {
		t.Fatalf("alice back in %q, want the default tenant", got)
	}
	if err := o.Delete("acme"); err != nil {
		t.Fatal(err)
	}
	if o.Exists("acme") || !o.Exists(DefaultOrg) {
		t.Fatal("Exists after delete")
	}
	if OrgName("") != DefaultOrg || TenantOfOrg(DefaultOrg) != "" || OrgName("acme") != "acme" {
		t.Fatal("OrgName/TenantOfOrg")
	}
}
