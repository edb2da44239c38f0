package record

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// SCRAM credentials are not a group shard's: every node of a cluster
// authenticates every user, so they are records of the global unit
// (GlobalShard, global.go), which every node's views replay.

// KindScramCredential is a user's salted SCRAM credential for one
// mechanism (Kafka's UserScramCredentialRecord, a KRaft metadata record
// of its own numbering; 20 here, past the coordinator's kinds).
const KindScramCredential Kind = 20

// legacyCredentialNamespace is the first byte of the credential keys
// written before the global unit (UpgradeGlobalKey).
const legacyCredentialNamespace = 'u'

// CredentialPrefix is the prefix of every credential record.
func CredentialPrefix() []byte { return KindPrefix(GlobalShard, KindScramCredential) }

// CredentialKey names a user's credential for one mechanism: Kafka's
// mechanism type (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
type CredentialKey struct {
	User      string
	Mechanism int8
}

// Key encodes the key.
func (k CredentialKey) Key() []byte {
	b := appendKeyString(CredentialPrefix(), k.User)
	return append(b, byte(k.Mechanism))
}

// ParseCredentialKey decodes a credential key.
func ParseCredentialKey(key []byte) (CredentialKey, error) {
	var k CredentialKey
	if !bytes.HasPrefix(key, CredentialPrefix()) {
		return k, fmt.Errorf("%w: key %q is not a credential key", ErrCorrupt, key)
	}
	r := keyReader{b: key[len(CredentialPrefix()):]}
	k.User = r.string()
	if r.err != nil || len(r.b) != 1 {
		return k, fmt.Errorf("%w: credential key %q", ErrCorrupt, key)
	}
	k.Mechanism = int8(r.b[0])
	return k, nil
}

// ScramCredential is a salted SCRAM credential (RFC 5802): what a server
// needs to check a client's proof and prove itself, never the password.
type ScramCredential struct {
	Salt       []byte
	Iterations int32
	StoredKey  []byte
	ServerKey  []byte
}

// Encode returns the value's bytes.
func (c ScramCredential) Encode() []byte {
	b := []byte{valueVersion1}
	b = kbin.AppendCompactBytes(b, c.Salt)
	b = kbin.AppendInt32(b, c.Iterations)
	b = kbin.AppendCompactBytes(b, c.StoredKey)
	return kbin.AppendCompactBytes(b, c.ServerKey)
}

// DecodeScramCredential decodes a ScramCredential value.
func DecodeScramCredential(v []byte) (ScramCredential, error) {
	var c ScramCredential
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return c, err
	}
	c.Salt = bytes.Clone(r.CompactBytes())
	c.Iterations = r.Int32()
	c.StoredKey = bytes.Clone(r.CompactBytes())
	c.ServerKey = bytes.Clone(r.CompactBytes())
	return c, complete(r, "scram credential")
}
