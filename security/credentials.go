package security

import (
	"errors"
	"fmt"
	"sort"

	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
)

// Credentials are the users' SCRAM credentials, kept as
// record.KindScramCredential records in the store (salted: the salt, the
// iterations, StoredKey and ServerKey; never a password). They are
// written through the store's global log, as the topic catalog is, so in
// cluster mode every node reads the same ones; a lookup is a store Get,
// one per authentication (a linearizable etcd read in cluster mode), so a
// deleted user cannot authenticate anywhere once the deletion returned.
type Credentials struct {
	st store.Store
}

// NewCredentials keeps credentials in st.
func NewCredentials(st store.Store) *Credentials { return &Credentials{st: st} }

// Get returns user's credential for m; ok is false if there is none.
func (c *Credentials) Get(user string, m Mechanism) (cred record.ScramCredential, ok bool, err error) {
	v, err := c.st.Get(record.CredentialKey{User: user, Mechanism: int8(m)}.Key())
	if errors.Is(err, store.ErrNotFound) {
		return cred, false, nil
	}
	if err != nil {
		return cred, false, fmt.Errorf("read credential of %q: %w", user, err)
	}
	cred, err = record.DecodeScramCredential(v)
	if err != nil {
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

// Apply writes changes in one durable batch.
func (c *Credentials) Apply(changes []Change) error {
	var b store.Batch
	for _, ch := range changes {
		k := record.CredentialKey{User: ch.User, Mechanism: int8(ch.Mechanism)}.Key()
		if ch.Cred == nil {
			b.Delete(k)
		} else {
			b.Put(k, ch.Cred.Encode())
		}
	}
	if err := c.st.Apply(&b); err != nil {
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
	err := c.st.Scan(record.CredentialPrefix(), func(k, v []byte) error {
		key, err := record.ParseCredentialKey(k)
		if err != nil {
			return err
		}
		cred, err := record.DecodeScramCredential(v)
		if err != nil {
			return err
		}
		out[key.User] = append(out[key.User], Info{Mechanism: Mechanism(key.Mechanism), Iterations: cred.Iterations})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read credentials: %w", err)
	}
	for _, infos := range out {
		sort.Slice(infos, func(i, j int) bool { return infos[i].Mechanism < infos[j].Mechanism })
	}
	return out, nil
}
