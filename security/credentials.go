package security

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/record"
)

// Credentials are the users' SCRAM credentials (salted: the salt, the
// iterations, StoredKey and ServerKey; never a password), records of the
// global unit (record.KindScramCredential, coordinator/global). Changes go
// to the unit; the list (DescribeUserScramCredentials) is a view of its
// snapshots; a lookup, one per authentication, reads the user's record
// from the store (global.Unit.Fresh: linearizable in cluster mode), so
// that a user deleted on any node cannot authenticate on any other once
// the deletion returned.
type Credentials struct {
	unit global.Unit
	snap atomic.Pointer[global.Snapshot]
}

// NewCredentials is a view of the credentials of unit.
func NewCredentials(unit global.Unit) *Credentials {
	c := &Credentials{unit: unit}
	unit.Subscribe(func(s *global.Snapshot) { c.snap.Store(s) })
	return c
}

// Get returns user's credential for m; ok is false if there is none.
func (c *Credentials) Get(user string, m Mechanism) (cred record.ScramCredential, ok bool, err error) {
	v, ok, err := c.unit.Fresh(record.CredentialKey{User: user, Mechanism: int8(m)}.Key())
	if err != nil || !ok {
		return cred, false, err
	}
	if cred, err = record.DecodeScramCredential(v); err != nil {
		return cred, false, fmt.Errorf("credential of %q: %w", user, err)
	}
	return cred, true, nil
}

// CheckPassword reports whether password is user's: checked against the
// user's strongest stored credential (SCRAM-SHA-512, else SCRAM-SHA-256),
// as Kafka's PlainServerCallbackHandler checks its users. SASL/PLAIN and
// the admin API's HTTP Basic authentication both check passwords here.
func (c *Credentials) CheckPassword(user, password string) (bool, error) {
	for _, m := range []Mechanism{ScramSHA512, ScramSHA256} {
		cred, ok, err := c.Get(user, m)
		if err != nil {
			return false, err
		}
		if ok {
			return CheckPassword(m, cred, password), nil
		}
	}
	return false, nil
}

// Change is one upsertion (Cred set) or deletion (Cred nil).
type Change struct {
	User      string
	Mechanism Mechanism
	Cred      *record.ScramCredential
}

// Apply writes changes in one durable batch of the global unit.
func (c *Credentials) Apply(changes []Change) error {
	cmd := global.AlterCredentials{Changes: make([]global.CredentialChange, len(changes))}
	for i, ch := range changes {
		cmd.Changes[i] = global.CredentialChange{Key: record.CredentialKey{User: ch.User, Mechanism: int8(ch.Mechanism)}, Cred: ch.Cred}
	}
	if _, err := c.unit.Do(context.Background(), cmd); err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	return nil
}

// Info is what may be told of a credential: its mechanism and iterations.
type Info struct {
	Mechanism  Mechanism
	Iterations int32
}

// List returns every user's credentials by user, each user's in
// Kafka's mechanism order.
func (c *Credentials) List() (map[string][]Info, error) {
	out := map[string][]Info{}
	for k, cred := range c.snap.Load().Credentials {
		out[k.User] = append(out[k.User], Info{Mechanism: Mechanism(k.Mechanism), Iterations: cred.Iterations})
	}
	for _, infos := range out {
		sort.Slice(infos, func(i, j int) bool { return infos[i].Mechanism < infos[j].Mechanism })
	}
	return out, nil
}
