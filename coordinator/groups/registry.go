package groups

// The shard's group registry: one entry per (tenant, group id), whatever
// protocol the group speaks. An entry holds what every group has, its
// stable cgp_ id, and the part for its protocol (its committed offsets are
// in the shard's offsets.Book):
// classic (classic*.go: JoinGroup and SyncGroup, and the simple groups that
// only commit offsets) or consumer (consumer*.go: KIP-848). Once a shard
// has loaded, exactly one part is set; a group changes protocol by having
// its part replaced (an empty group converts either way). Mixed groups,
// classic members inside a consumer group, will live in the consumer part.

import (
	"cmp"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/offsets"
	"github.com/cohort-dev/cohort/record"
)

// gkey names a group: two tenants' groups of the same name are two groups.
type gkey struct {
	tenant, name string
}

// group is a registry entry.
type group struct {
	gkey
	// id is the stable cgp_<ULID> id minted at creation; "" while only
	// offsets have been replayed.
	id string

	classic  *classicGroup  // nil unless a classic (or simple) group
	consumer *consumerGroup // nil unless a KIP-848 consumer group
}

// off is the group's name in the shard's offsets.Book.
func (k gkey) off() offsets.Group { return offsets.Group{Tenant: k.tenant, Name: k.name} }

// lookup returns the group, or nil.
func (s *Shard) lookup(tenant, name string) *group {
	return s.groups[gkey{tenant, name}]
}

// entry returns the group, registering an empty entry (no part, no id)
// if there is none.
func (s *Shard) entry(k gkey) *group {
	g := s.groups[k]
	if g == nil {
		g = &group{gkey: k}
		s.groups[k] = g
		s.countGroup(k.tenant, 1)
	}
	return g
}

// forget drops the entry if nothing is left in it.
func (s *Shard) forget(g *group) {
	if g.classic == nil && g.consumer == nil && !s.offs.Has(g.off()) {
		delete(s.groups, g.gkey)
		s.countGroup(g.tenant, -1)
	}
}

// classicGroup returns the classic part of a group, or nil.
func (s *Shard) classicGroup(tenant, name string) *classicGroup {
	if g := s.lookup(tenant, name); g != nil {
		return g.classic
	}
	return nil
}

// consumerGroup returns the consumer part of a group, or nil.
func (s *Shard) consumerGroup(tenant, name string) *consumerGroup {
	if g := s.lookup(tenant, name); g != nil {
		return g.consumer
	}
	return nil
}

// sortedGroups returns every group in (tenant, name) order, so that map
// order never reaches an output.
func (s *Shard) sortedGroups() []*group {
	out := make([]*group, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.name, b.name))
	})
	return out
}

// key is the group's record key.
func (s *Shard) key(k gkey) record.GroupKey {
	return record.GroupKey{Shard: s.cfg.Shard, Tenant: k.tenant, Group: k.name}
}

// Timer keys: a kind byte, then the tenant and the group name each as its
// length, ":" and the bytes, then (for a member's timer) the member id, so
// that any tenant and group name parse back.
func groupTimer(kind byte, k gkey) string {
	var b strings.Builder
	b.WriteByte(kind)
	for _, part := range []string{k.tenant, k.name} {
		b.WriteString(strconv.Itoa(len(part)))
		b.WriteByte(':')
		b.WriteString(part)
	}
	return b.String()
}

func memberTimer(kind byte, k gkey, m string) string { return groupTimer(kind, k) + m }

// parseTimer splits a group or member timer key.
func parseTimer(key string) (kind byte, k gkey, m string, ok bool) {
	if len(key) < 5 {
		return 0, gkey{}, "", false
	}
	kind, rest := key[0], key[1:]
	var parts [2]string
	for i := range parts {
		n, tail, found := strings.Cut(rest, ":")
		l, err := strconv.Atoi(n)
		if !found || err != nil || l < 0 || l > len(tail) {
			return 0, gkey{}, "", false
		}
		parts[i], rest = tail[:l], tail[l:]
	}
	return kind, gkey{parts[0], parts[1]}, rest, true
}

// newGroupID mints cgp_<ULID>: 48 bits of Unix milliseconds and 80 random
// bits, in Crockford's base32.
func (s *Shard) newGroupID(now time.Time) string {
	var u [16]byte
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		u[i] = byte(ms)
		ms >>= 8
	}
	binary.BigEndian.PutUint64(u[6:], s.rng.Uint64())
	binary.BigEndian.PutUint16(u[14:], uint16(s.rng.Uint64()))
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	hi, lo := binary.BigEndian.Uint64(u[:8]), binary.BigEndian.Uint64(u[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return "cgp_" + string(out[:])
}

// memberID is Kafka's generateMemberId: the client id (or instance id)
// and a random UUID.
func (s *Shard) memberID(prefix string) string {
	var u [16]byte
	binary.BigEndian.PutUint64(u[:8], s.rng.Uint64())
	binary.BigEndian.PutUint64(u[8:], s.rng.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(prefix)+37)
	b = append(b, prefix...)
	b = append(b, '-')
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[c>>4], hex[c&15])
	}
	return string(b)
}

// sortedKeys returns m's keys in order, so that map order never reaches
// an output.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// deadline is a member's deadline in Unix nanoseconds, 0 for none: a
// third of a time.Time's size, and a member has two.
type deadline int64

func deadlineAt(t time.Time) deadline { return deadline(t.UnixNano()) }

func (d deadline) IsZero() bool          { return d == 0 }
func (d deadline) After(e deadline) bool { return d > e }
func (d deadline) time() time.Time       { return time.Unix(0, int64(d)) }
