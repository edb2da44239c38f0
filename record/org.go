package record

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Organisations (tenants) are not a group shard's either: every node
// maps every principal to its organisation, so they are records of the
// global unit (GlobalShard, global.go), as credentials and ACLs are.

// KindOrg is an organisation: its name is the tenant every group,
// offset, topic and ACL of its principals is scoped to.
const KindOrg Kind = 22

// KindOrgMember puts a principal in an organisation.
const KindOrgMember Kind = 23

// legacyOrgNamespace is the first byte of the organisation keys written
// before the global unit (UpgradeGlobalKey).
const legacyOrgNamespace = 'o'

// OrgPrefix is the prefix of every organisation record.
func OrgPrefix() []byte { return KindPrefix(GlobalShard, KindOrg) }

// OrgMemberPrefix is the prefix of every organisation-member record.
func OrgMemberPrefix() []byte { return KindPrefix(GlobalShard, KindOrgMember) }

// OrgKey is an organisation's key.
func OrgKey(name string) []byte { return appendKeyString(OrgPrefix(), name) }

// OrgMemberKey is a principal's ("User:alice") membership key.
func OrgMemberKey(principal string) []byte { return appendKeyString(OrgMemberPrefix(), principal) }

// ParseOrgKey decodes an organisation key into its name.
func ParseOrgKey(key []byte) (string, error) { return parseOneString(key, OrgPrefix(), "organisation") }

// ParseOrgMemberKey decodes a membership key into its principal.
func ParseOrgMemberKey(key []byte) (string, error) {
	return parseOneString(key, OrgMemberPrefix(), "organisation member")
}

func parseOneString(key, prefix []byte, what string) (string, error) {
	if !bytes.HasPrefix(key, prefix) {
		return "", fmt.Errorf("%w: key %q is not an %s key", ErrCorrupt, key, what)
	}
	r := keyReader{b: key[len(prefix):]}
	s := r.string()
	if r.err != nil || len(r.b) != 0 {
		return "", fmt.Errorf("%w: %s key %q", ErrCorrupt, what, key)
	}
	return s, nil
}

// Org is an organisation record's value.
type Org struct {
	// CreatedMs is when it was created, Unix milliseconds.
	CreatedMs int64
}

// Encode returns the value's bytes.
func (o Org) Encode() []byte { return kbin.AppendInt64([]byte{valueVersion1}, o.CreatedMs) }

// DecodeOrg decodes an Org value.
func DecodeOrg(v []byte) (Org, error) {
	var o Org
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return o, err
	}
	o.CreatedMs = r.Int64()
	return o, complete(r, "organisation")
}

// OrgMember is a membership record's value: the organisation.
type OrgMember struct {
	Org string
}

// Encode returns the value's bytes.
func (m OrgMember) Encode() []byte { return kbin.AppendCompactString([]byte{valueVersion1}, m.Org) }

// DecodeOrgMember decodes an OrgMember value.
func DecodeOrgMember(v []byte) (OrgMember, error) {
	var m OrgMember
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return m, err
	}
	m.Org = r.CompactString()
	return m, complete(r, "organisation member")
}
