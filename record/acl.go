package record

import (
	"bytes"
	"fmt"
)

// ACLs, like SCRAM credentials, are every node's: each node authorizes
// every request it gets, so they are records of the global unit
// (GlobalShard, global.go), which every node's views replay. An ACL is all key: Kafka keeps a set of bindings, so two identical
// CreateAcls leave one, and DeleteAcls deletes keys.

// KindACL is one ACL binding (Kafka's AccessControlEntryRecord, a KRaft
// metadata record of its own numbering; 21 here, after the credentials).
const KindACL Kind = 21

// legacyACLNamespace is the first byte of the ACL keys written before
// the global unit (UpgradeGlobalKey).
const legacyACLNamespace = 'a'

// ACLPrefix is the prefix of every ACL record.
func ACLPrefix() []byte { return KindPrefix(GlobalShard, KindACL) }

// ACL is one binding in Kafka's numbering (kmsg.ACLResourceType,
// ACLResourcePatternType, ACLOperation, ACLPermissionType): a resource
// pattern and an entry saying who, from where, may or may not do what.
type ACL struct {
	ResourceType int8
	PatternType  int8
	Name         string
	Principal    string // "User:alice", or "User:*"
	Host         string // an IP address, or "*"
	Operation    int8
	Permission   int8
	// Tenant is the organisation the binding belongs to and applies in
	// ("" the default one). Encoded at the end of the key only when not
	// "", so that keys written before organisations parse as the default
	// organisation's.
	Tenant string
}

// Key encodes the binding as a key.
func (a ACL) Key() []byte {
	b := append(ACLPrefix(), byte(a.ResourceType), byte(a.PatternType))
	b = appendKeyString(b, a.Name)
	b = appendKeyString(b, a.Principal)
	b = appendKeyString(b, a.Host)
	b = append(b, byte(a.Operation), byte(a.Permission))
	if a.Tenant != "" {
		b = appendKeyString(b, a.Tenant)
	}
	return b
}

// ACLValue is every ACL record's value: a version byte, so that a later
// field has somewhere to go.
func ACLValue() []byte { return []byte{valueVersion1} }

// ParseACLKey decodes an ACL key.
func ParseACLKey(key []byte) (ACL, error) {
	var a ACL
	n := len(ACLPrefix())
	if !bytes.HasPrefix(key, ACLPrefix()) || len(key) < n+2 {
		return a, fmt.Errorf("%w: key %q is not an ACL key", ErrCorrupt, key)
	}
	a.ResourceType, a.PatternType = int8(key[n]), int8(key[n+1])
	r := keyReader{b: key[n+2:]}
	a.Name = r.string()
	a.Principal = r.string()
	a.Host = r.string()
	if r.err != nil || len(r.b) < 2 {
		return a, fmt.Errorf("%w: ACL key %q", ErrCorrupt, key)
	}
	a.Operation, a.Permission = int8(r.b[0]), int8(r.b[1])
	if len(r.b) > 2 {
		// One encoding per binding: a tenant is there only when not "".
		r.b = r.b[2:]
		if a.Tenant = r.string(); r.err != nil || len(r.b) != 0 || a.Tenant == "" {
			return a, fmt.Errorf("%w: ACL key %q", ErrCorrupt, key)
		}
	}
	return a, nil
}
