package security

// Organisations (tenants): every principal belongs to one, and every
// group, committed offset, topic and ACL it uses is its organisation's.
// A principal no membership names belongs to the default organisation,
// tenant "" (named DefaultOrg), which is all the embedded default has.
// The records (record.KindOrg, record.KindOrgMember) are the global
// unit's, as credentials and ACLs are (coordinator/global); Orgs is a view
// of them for the lookups each authentication makes, and sends the unit
// its changes.

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"sync/atomic"
	"time"

	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/record"
)

// DefaultOrg is the name of the default organisation, tenant "".
const DefaultOrg = "default"

// Errors of the organisation changes.
var (
	ErrOrgExists   = global.ErrOrgExists
	ErrOrgNotFound = global.ErrOrgNotFound
	ErrOrgNotEmpty = global.ErrOrgNotEmpty
)

var orgName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidateOrgName checks a new organisation's name: lower-case letters,
// digits and '-', starting with a letter or digit, at most 63 characters
// (a DNS label, so that it fits an RRL and a metric label), and not
// DefaultOrg.
func ValidateOrgName(name string) error {
	if name == DefaultOrg {
		return fmt.Errorf("organisation name %q is the default organisation's", name)
	}
	if !orgName.MatchString(name) {
		return fmt.Errorf("organisation name %q: want 1-63 of a-z, 0-9 and '-', starting with a letter or digit", name)
	}
	return nil
}

// OrgName is the name tenant goes by: DefaultOrg for "".
func OrgName(tenant string) string {
	if tenant == "" {
		return DefaultOrg
	}
	return tenant
}

// TenantOfOrg is the tenant of an organisation name: "" for DefaultOrg.
func TenantOfOrg(name string) string {
	if name == DefaultOrg {
		return ""
	}
	return name
}

// Org is an organisation as listed.
type Org struct {
	Name    string
	Created time.Time // zero for the default organisation
	// Members are the principals put in it, sorted ("User:alice"); the
	// default organisation lists none (it has everyone else).
	Members []string
}

// Orgs is the organisation registry, a view of the global unit. It is
// safe for concurrent use.
type Orgs struct {
	unit global.Unit
	set  atomic.Pointer[orgSet]
}

type orgSet struct {
	orgs    map[string]record.Org // by name, the default one not included
	members map[string]string     // principal → organisation
}

// NewOrgs is a view of the organisations of unit.
func NewOrgs(unit global.Unit) (*Orgs, error) {
	o := &Orgs{unit: unit}
	unit.Subscribe(func(s *global.Snapshot) { o.set.Store(&orgSet{orgs: s.Orgs, members: s.Members}) })
	return o, nil
}

// TenantOf is the tenant p acts for: its organisation's, "" if none.
func (o *Orgs) TenantOf(p Principal) string {
	if o == nil {
		return ""
	}
	return o.set.Load().members[p.String()]
}

// Exists reports whether the organisation (a name, DefaultOrg included)
// exists.
func (o *Orgs) Exists(name string) bool {
	if name == DefaultOrg {
		return true
	}
	if o == nil {
		return false
	}
	_, ok := o.set.Load().orgs[name]
	return ok
}

// List returns every organisation, the default one first, then by name.
func (o *Orgs) List() []Org {
	out := []Org{{Name: DefaultOrg}}
	if o == nil {
		return out
	}
	s := o.set.Load()
	byOrg := map[string][]string{}
	for p, org := range s.members {
		byOrg[org] = append(byOrg[org], p)
	}
	for name, rec := range s.orgs {
		ms := byOrg[name]
		sort.Strings(ms)
		out = append(out, Org{Name: name, Created: time.UnixMilli(rec.CreatedMs).UTC(), Members: ms})
	}
	sort.Slice(out[1:], func(i, j int) bool { return out[1+i].Name < out[1+j].Name })
	return out
}

// Create makes an organisation.
func (o *Orgs) Create(name string) error {
	if err := ValidateOrgName(name); err != nil {
		return err
	}
	return o.do(global.CreateOrg{Name: name})
}

// Delete removes an organisation that has no members left. Its groups,
// offsets, topics and ACLs stay in the store, out of everyone's sight,
// and are its again if it is created anew.
func (o *Orgs) Delete(name string) error { return o.do(global.DeleteOrg{Name: name}) }

// SetMember puts principal ("User:alice") in the organisation name,
// moving it from any other; DefaultOrg takes it out of every other.
func (o *Orgs) SetMember(name, principal string) error {
	if _, _, err := ParsePrincipal(principal); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("%w: %q", ErrOrgNotFound, name)
	}
	return o.do(global.SetMember{Org: TenantOfOrg(name), Principal: principal})
}

func (o *Orgs) do(cmd any) error {
	_, err := o.unit.Do(context.Background(), cmd)
	return err
}
