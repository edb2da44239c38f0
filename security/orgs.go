package security

// Organisations (tenants): every principal belongs to one, and every
// group, committed offset, topic and ACL it uses is its organisation's.
// A principal no membership names belongs to the default organisation,
// tenant "" (named DefaultOrg), which is all the embedded default has.
// The records (record.KindOrg, record.KindOrgMember) are written through
// the store's global log, as credentials and ACLs are; Orgs holds them in
// memory for the lookups each authentication makes and reloads them after
// each change it makes (Reload, for changes other nodes made).

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
)

// DefaultOrg is the name of the default organisation, tenant "".
const DefaultOrg = "default"

// Errors of the organisation changes.
var (
	ErrOrgExists   = errors.New("organisation already exists")
	ErrOrgNotFound = errors.New("no such organisation")
	ErrOrgNotEmpty = errors.New("organisation still has members")
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

// Orgs is the organisation registry. It is safe for concurrent use.
type Orgs struct {
	st  store.Store
	mu  sync.Mutex // serializes changes and reloads
	set atomic.Pointer[orgSet]
}

type orgSet struct {
	orgs    map[string]record.Org // by name, the default one not included
	members map[string]string     // principal → organisation
}

// NewOrgs loads the organisations kept in st.
func NewOrgs(st store.Store) (*Orgs, error) {
	o := &Orgs{st: st}
	if err := o.Reload(); err != nil {
		return nil, err
	}
	return o, nil
}

// Reload reads every organisation and membership from the store again.
func (o *Orgs) Reload() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reloadLocked()
}

func (o *Orgs) reloadLocked() error {
	s := &orgSet{orgs: map[string]record.Org{}, members: map[string]string{}}
	err := o.st.Scan(record.OrgPrefix(), func(k, v []byte) error {
		name, err := record.ParseOrgKey(k)
		if err != nil {
			return err
		}
		rec, err := record.DecodeOrg(v)
		if err != nil {
			return err
		}
		s.orgs[name] = rec
		return nil
	})
	if err == nil {
		err = o.st.Scan(record.OrgMemberPrefix(), func(k, v []byte) error {
			p, err := record.ParseOrgMemberKey(k)
			if err != nil {
				return err
			}
			m, err := record.DecodeOrgMember(v)
			if err != nil {
				return err
			}
			s.members[p] = m.Org
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("read organisations: %w", err)
	}
	o.set.Store(s)
	return nil
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
func (o *Orgs) Create(name string, now time.Time) error {
	if err := ValidateOrgName(name); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.set.Load().orgs[name]; ok {
		return fmt.Errorf("%w: %s", ErrOrgExists, name)
	}
	var b store.Batch
	b.Put(record.OrgKey(name), record.Org{CreatedMs: now.UnixMilli()}.Encode())
	return o.applyLocked(&b)
}

// Delete removes an organisation that has no members left. Its groups,
// offsets, topics and ACLs stay in the store, out of everyone's sight,
// and are its again if it is created anew.
func (o *Orgs) Delete(name string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.set.Load()
	if _, ok := s.orgs[name]; !ok {
		return fmt.Errorf("%w: %s", ErrOrgNotFound, name)
	}
	for _, org := range s.members {
		if org == name {
			return fmt.Errorf("%w: %s", ErrOrgNotEmpty, name)
		}
	}
	var b store.Batch
	b.Delete(record.OrgKey(name))
	return o.applyLocked(&b)
}

// SetMember puts principal ("User:alice") in the organisation name,
// moving it from any other; DefaultOrg takes it out of every other.
func (o *Orgs) SetMember(name, principal string) error {
	if _, _, err := ParsePrincipal(principal); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var b store.Batch
	if name == DefaultOrg {
		b.Delete(record.OrgMemberKey(principal))
	} else {
		if _, ok := o.set.Load().orgs[name]; !ok {
			return fmt.Errorf("%w: %s", ErrOrgNotFound, name)
		}
		b.Put(record.OrgMemberKey(principal), record.OrgMember{Org: name}.Encode())
	}
	return o.applyLocked(&b)
}

func (o *Orgs) applyLocked(b *store.Batch) error {
	if err := o.st.Apply(b); err != nil {
		return fmt.Errorf("write organisations: %w", err)
	}
	return o.reloadLocked()
}
