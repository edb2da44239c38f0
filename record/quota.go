package record

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Client quotas (KIP-546's AlterClientQuotas and DescribeClientQuotas)
// are every node's, as ACLs and organisations are: each node enforces
// them on the connections it serves, so they are records of the global
// unit (GlobalShard, global.go).
//
// One record is one (entity, key) pair, as Kafka's QuotaRecord: removing
// a key deletes its record, so an entity without keys has no record at
// all.

// KindQuota is one quota value of one entity (Kafka's QuotaRecord, a KRaft
// metadata record of its own numbering; 24 here, after the
// organisations).
const KindQuota Kind = 24

// legacyQuotaNamespace is the first byte of the quota keys written
// before the global unit (UpgradeGlobalKey).
const legacyQuotaNamespace = 'q'

// QuotaPrefix is the prefix of every quota record.
func QuotaPrefix() []byte { return KindPrefix(GlobalShard, KindQuota) }

// Quota is one quota record: the entity (a type such as "org" and a
// name, or no name for the type's default entity) and the key its value
// is of.
type Quota struct {
	EntityType string
	// Default is Kafka's default entity (a null name): the value applies
	// to every entity of the type without one of its own. Name is ""
	// then.
	Default bool
	Name    string
	// KeyName is the quota key: "producer_byte_rate", "max_groups", ...
	KeyName string
}

// Key encodes the record's key: the entity type, a byte that is 0 for
// the default entity and 1 for a named one, the name and the quota key.
// The default entity sorts before every named one of its type.
func (q Quota) Key() []byte {
	b := appendKeyString(QuotaPrefix(), q.EntityType)
	if q.Default {
		b = append(b, 0)
	} else {
		b = append(b, 1)
	}
	b = appendKeyString(b, q.Name)
	return appendKeyString(b, q.KeyName)
}

// ParseQuotaKey decodes a quota key.
func ParseQuotaKey(key []byte) (Quota, error) {
	var q Quota
	if !bytes.HasPrefix(key, QuotaPrefix()) {
		return q, fmt.Errorf("%w: key %q is not a quota key", ErrCorrupt, key)
	}
	r := keyReader{b: key[len(QuotaPrefix()):]}
	q.EntityType = r.string()
	if r.err == nil && len(r.b) > 0 && r.b[0] <= 1 {
		q.Default = r.b[0] == 0
		r.b = r.b[1:]
	} else {
		r.err = ErrCorrupt
	}
	q.Name = r.string()
	q.KeyName = r.string()
	if r.err != nil || len(r.b) != 0 || (q.Default && q.Name != "") {
		return q, fmt.Errorf("%w: quota key %q", ErrCorrupt, key)
	}
	return q, nil
}

// QuotaValue encodes a quota's value: Kafka's QuotaRecord keeps a double.
func QuotaValue(v float64) []byte {
	return kbin.AppendFloat64([]byte{valueVersion1}, v)
}

// DecodeQuotaValue decodes a quota's value.
func DecodeQuotaValue(v []byte) (float64, error) {
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return 0, err
	}
	f := r.Float64()
	return f, complete(r, "quota")
}
