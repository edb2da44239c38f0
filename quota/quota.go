// Package quota keeps Cohort's per-organisation quotas and measures the
// rates they bound.
//
// The quotas are Kafka's client quotas (KIP-546: AlterClientQuotas and
// DescribeClientQuotas) with the organisation as the entity: entity type
// "org", named by the organisation ("default" for the default one), or
// with no name for the default entity, whose values apply to every
// organisation without one of its own (Kafka's default entities). Each
// key is resolved on its own: an organisation's own value, else the
// default entity's, else no limit (as Kafka's quota callback resolves
// each quota type to the most specific entity that sets it).
//
// The records (record.KindQuota) are written through the store's global
// log, as ACLs and organisations are; a Registry holds them in memory
// and reloads them after each change it makes (Reload, for changes other
// nodes made).
//
// Rate (rate.go) is Kafka's windowed rate sensor and throttle-time rule.
// The package does no I/O beyond the store, reads no clock (callers pass
// the time) and starts no goroutines.
package quota

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/record"
)

// EntityOrg is the one entity type Cohort keeps quotas for.
const EntityOrg = "org"

// The quota keys. The first three are Kafka's; the rest are Cohort's.
const (
	// ProducerByteRate bounds the bytes per second of an organisation's
	// Produce requests (whole frames), over all its connections to a
	// node.
	ProducerByteRate = "producer_byte_rate"
	// ConsumerByteRate bounds the bytes per second of its Fetch
	// responses.
	ConsumerByteRate = "consumer_byte_rate"
	// RequestPercentage bounds the time its requests spend in their
	// handlers on the connections' readers (the ordered part: decoding,
	// validation, a produce's append), as a percentage of one second per
	// second: Kafka's share of one request-handler thread. Time spent
	// waiting (an fsync, a long poll, a group coordinator's shard) is not
	// counted, as Kafka does not count purgatory.
	RequestPercentage = "request_percentage"
	// RequestRate bounds its requests per second.
	RequestRate = "request_rate"
	// MaxGroups bounds its groups (GROUP_MAX_SIZE_REACHED for a new one).
	MaxGroups = "max_groups"
	// MaxMembersPerGroup bounds the members of each of its groups
	// (GROUP_MAX_SIZE_REACHED for a new member), below the broker's
	// group.max.size and group.consumer.max.size.
	MaxMembersPerGroup = "max_members_per_group"
)

// keyDef describes a key: integer keys take only whole numbers.
type keyDef struct {
	integer bool
}

var keys = map[string]keyDef{
	ProducerByteRate:   {integer: true}, // LONG in Kafka
	ConsumerByteRate:   {integer: true}, // LONG in Kafka
	RequestPercentage:  {},              // DOUBLE in Kafka
	RequestRate:        {},
	MaxGroups:          {integer: true},
	MaxMembersPerGroup: {integer: true},
}

// Keys returns every quota key, sorted.
func Keys() []string {
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ValidateValue checks a new value of key as Kafka's
// ClientQuotaControlManager does: it returns the message of its
// INVALID_REQUEST, or "" if the value is valid.
func ValidateValue(key string, v float64) string {
	def, ok := keys[key]
	if !ok {
		return "Invalid configuration key " + key
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return "Quota " + key + " must be greater than 0"
	}
	if def.integer && (v != math.Trunc(v) || v > math.MaxInt64) {
		return fmt.Sprintf("Proposed value for %s is not a whole number: %v", key, v)
	}
	return ""
}

// Entity is an "org" entity: a named organisation, or the default one.
type Entity struct {
	// Default is Kafka's default entity (a null name); Name is "" then.
	Default bool
	Name    string
}

// Entry is an entity and the values set for it.
type Entry struct {
	Entity Entity
	Values map[string]float64
}

// Op is one change of one key: a new value, or its removal.
type Op struct {
	Key    string
	Value  float64
	Remove bool
}

// Limits are the quotas that apply to one organisation; zero is no
// limit.
type Limits struct {
	ProducerByteRate, ConsumerByteRate, RequestPercentage, RequestRate float64
	MaxGroups, MaxMembersPerGroup                                      int
}

// Rates reports whether any rate quota applies.
func (l Limits) Rates() bool {
	return l.ProducerByteRate > 0 || l.ConsumerByteRate > 0 || l.RequestPercentage > 0 || l.RequestRate > 0
}

// Registry holds every quota: a view of the global unit's quota records.
// It is safe for concurrent use; a nil Registry has no quotas.
type Registry struct {
	unit global.Unit
	set  atomic.Pointer[quotaSet]
}

type quotaSet struct {
	entries map[Entity]map[string]float64
	// limits caches each organisation's resolved limits: a lookup per
	// request costs a map read, not a resolution.
	limits sync.Map // org name → Limits
	any    bool     // some quota is set
}

// NewRegistry is a view of the quotas of unit.
func NewRegistry(unit global.Unit) (*Registry, error) {
	r := &Registry{unit: unit}
	unit.Subscribe(r.update)
	return r, nil
}

// update indexes the quotas of a snapshot of the global unit.
func (r *Registry) update(snap *global.Snapshot) {
	s := &quotaSet{entries: map[Entity]map[string]float64{}}
	for q, v := range snap.Quotas {
		if q.EntityType != EntityOrg {
			continue // a type a later version keeps: not ours to apply
		}
		e := Entity{Default: q.Default, Name: q.Name}
		if s.entries[e] == nil {
			s.entries[e] = map[string]float64{}
		}
		s.entries[e][q.KeyName] = v
		s.any = true
	}
	r.set.Store(s)
}

// Entries returns every entity with its values, the default entity
// first, then by name.
func (r *Registry) Entries() []Entry {
	if r == nil {
		return nil
	}
	s := r.set.Load()
	out := make([]Entry, 0, len(s.entries))
	for e, vs := range s.entries {
		cp := make(map[string]float64, len(vs))
		for k, v := range vs {
			cp[k] = v
		}
		out = append(out, Entry{Entity: e, Values: cp})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Entity.Default != out[j].Entity.Default {
			return out[i].Entity.Default
		}
		return out[i].Entity.Name < out[j].Entity.Name
	})
	return out
}

// Alter applies the changes (validated by the caller) in one durable
// batch of the global unit: a value is set, a removal deletes the key's
// record (removing a key that is not set changes nothing).
func (r *Registry) Alter(changes map[Entity][]Op) error {
	var cmd global.AlterQuotas
	for e, ops := range changes {
		for _, op := range ops {
			q := record.Quota{EntityType: EntityOrg, Default: e.Default, Name: e.Name, KeyName: op.Key}
			cmd.Changes = append(cmd.Changes, global.QuotaChange{Quota: q, Value: op.Value, Remove: op.Remove})
		}
	}
	if len(cmd.Changes) == 0 {
		return nil
	}
	if _, err := r.unit.Do(context.Background(), cmd); err != nil {
		return fmt.Errorf("write quotas: %w", err)
	}
	return nil
}

// Limits returns the quotas that apply to the organisation named org
// ("default" for the default organisation).
func (r *Registry) Limits(org string) Limits {
	if r == nil {
		return Limits{}
	}
	s := r.set.Load()
	if !s.any {
		return Limits{}
	}
	if l, ok := s.limits.Load(org); ok {
		return l.(Limits)
	}
	own, def := s.entries[Entity{Name: org}], s.entries[Entity{Default: true}]
	get := func(k string) float64 {
		if v, ok := own[k]; ok {
			return v
		}
		return def[k]
	}
	l := Limits{
		ProducerByteRate:   get(ProducerByteRate),
		ConsumerByteRate:   get(ConsumerByteRate),
		RequestPercentage:  get(RequestPercentage),
		RequestRate:        get(RequestRate),
		MaxGroups:          clampInt(get(MaxGroups)),
		MaxMembersPerGroup: clampInt(get(MaxMembersPerGroup)),
	}
	s.limits.Store(org, l)
	return l
}

func clampInt(v float64) int {
	if v >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(v)
}
