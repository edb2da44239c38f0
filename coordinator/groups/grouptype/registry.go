package grouptype

// The shard's group registry: one entry per (tenant, group id), whatever
// type the group is. An entry holds what every group has, its stable cgp_
// id, and its type's part (its committed offsets are in the Host's
// offsets.Book): a classic.Group (JoinGroup and SyncGroup, and the simple
// groups that only commit offsets) or a KIP-848 consumer group (classic
// members inside it included). Once a shard has loaded, every entry has a
// part; a group changes type by having its part replaced (package
// migration; an empty group converts either way). The types' replays
// register and forget entries; the shard routes each request by them.

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/offsets"
)

// Key names a group: two tenants' groups of the same name are two groups.
type Key struct {
	Tenant, Name string
}

// Off is the group's name in the shard's offsets.Book.
func (k Key) Off() offsets.Group { return offsets.Group{Tenant: k.Tenant, Name: k.Name} }

// Entry is a registry entry.
type Entry struct {
	Key
	// ID is the stable cgp_<ULID> id minted at creation; "" while only
	// offsets have been replayed.
	ID string
	// Part is the group type's state; nil while only offsets have been
	// replayed (Loaded makes such a group a simple classic group) or
	// between a conversion's tombstone and its new type's first record.
	Part Part
	// Offs holds the group's committed offsets: the registry is the
	// Book's Index (Host.Slot), one table of the groups for both.
	Offs offsets.Slot
	// Inspected is the group's fingerprint at the shard's last inspect
	// of changes (coordinator/groups' InspectCmd with a Token); 0: none.
	// (32 bits keep an entry in 80 bytes.)
	Inspected uint32
	// touched: the group may have changed since that inspect (Touch).
	touched bool
	// unswept: the group may have changed since the shard's last
	// retention sweep (TakeUnswept).
	unswept bool
	// Due tags the bucket of the shard's retention index the group was
	// last put in (the groups package's sweep); 0: none.
	Due uint16
}

// Slot is the offsets.Index of the Host's Book: a group's offsets are in
// its entry. A group with none gets an entry (names copied unless kept);
// the shard forgets it once nothing is left in it (Forget). A lookup
// here touches nothing: the Book reads every group's offsets for the
// lag sampler's inspect.
func (h *Host) Slot(g offsets.Group, add, kept bool) *offsets.Slot {
	k := Key{g.Tenant, g.Name}
	e := h.groups.get(k)
	if e == nil {
		if !add {
			return nil
		}
		if !kept {
			k = Key{strings.Clone(k.Tenant), strings.Clone(k.Name)}
		}
		e = h.Register(k)
	}
	return &e.Offs
}

// Emptied is nothing to the registry: Forget drops an entry with
// nothing left in it.
func (h *Host) Emptied(offsets.Group) {}

// Range calls fn for every group with committed offsets. fn must not
// register or forget a group (the Book's callers, its Loaded and its
// sorted list of groups, do neither): the table's entries move when one
// comes or goes, and a range would miss some (groupTable.all panics).
func (h *Host) Range(fn func(offsets.Group, *offsets.Slot)) {
	for e := range h.groups.all() {
		if !e.Offs.Empty() {
			fn(e.Off(), &e.Offs)
		}
	}
}

// Part is a group type's state of one group, as the shard sees it.
type Part interface {
	// DurableState renders what the group's records hold (nil: nothing
	// durable), in a stable order.
	DurableState() []string
}

// Lookup returns the group, or nil. A group found is touched: whoever
// looks a group up may change it.
func (h *Host) Lookup(tenant, name string) *Entry {
	return h.Get(Key{tenant, name})
}

// Get is Lookup by key.
func (h *Host) Get(k Key) *Entry {
	g := h.groups.get(k)
	if g != nil {
		h.Touch(g)
	}
	return g
}

// Register returns the group, registering an empty entry (no part, no
// id) if there is none; either way it is touched.
func (h *Host) Register(k Key) *Entry {
	g := h.groups.get(k)
	if g == nil {
		g = &Entry{Key: k}
		h.groups.put(g)
		h.sorted = nil
		if !h.loaded && !h.loadBroken {
			h.loadOrder = append(h.loadOrder, g)
		}
		h.countGroup(k.Tenant, 1)
	}
	h.Touch(g)
	return g
}

// Forget drops the entry if nothing is left in it.
func (h *Host) Forget(g *Entry) {
	if g.Part == nil && !h.Offs.Has(g.Off()) {
		h.groups.remove(g)
		h.sorted = nil
		if !h.loaded {
			h.loadOrder, h.loadBroken = nil, true
		}
		h.countGroup(g.Tenant, -1)
		if g.Inspected != 0 {
			h.Listed--
		}
	}
}

// Touch marks g as maybe changed since the last inspect of changes, so
// that the next reads it again: the groups that changed between two
// lag samples are found without a walk of every group (a million quiet
// ones). Every change of a group comes through a lookup (Lookup, Get,
// Register: requests, timers, replays), but those of many at once
// (TouchAll).
func (h *Host) Touch(g *Entry) {
	if !g.unswept && !h.allUnswept {
		g.unswept = true
		h.unswept = append(h.unswept, g)
		if len(h.unswept) > h.groups.len()/4+1024 {
			// A sweep of every group costs as much by then.
			h.allUnswept, h.unswept = true, nil
		}
	}
	if g.touched || h.allTouched {
		return
	}
	g.touched = true
	h.touched = append(h.touched, g)
	if len(h.touched) > h.groups.len()+1024 {
		// Forgotten entries pile up when nothing inspects: a walk of
		// every group is as cheap by then.
		h.TouchAll()
	}
}

// TouchAll marks every group as maybe changed: a topic catalog's change
// (a consumer group's summary names its topics by it), a deletion of
// topics, a load.
func (h *Host) TouchAll() {
	h.allTouched, h.touched = true, nil
	h.allUnswept, h.unswept = true, nil
}

// TakeUnswept returns the groups touched since the last call that are
// still registered, in no order, or all true if every group may have
// changed (the caller then sweeps them all, and must call Swept for
// each); the marks are cleared. It is the retention sweep's Touch, apart
// from the inspect's.
func (h *Host) TakeUnswept() (unswept []*Entry, all bool) {
	unswept, all = h.unswept, h.allUnswept
	h.unswept, h.allUnswept = nil, false
	for _, g := range unswept {
		g.unswept = false
	}
	if all {
		return nil, true
	}
	return slices.DeleteFunc(unswept, func(g *Entry) bool { return !h.Registered(g) }), false
}

// Swept clears g's mark, for a sweep of every group after TakeUnswept
// said all.
func (h *Host) Swept(g *Entry) { g.unswept = false }

// Unswept reports whether g may have changed since the last retention
// sweep (for the check of the sweep's index).
func (h *Host) Unswept(g *Entry) bool { return g.unswept || h.allUnswept }

// Registered reports whether g is the registry's entry of its key.
func (h *Host) Registered(g *Entry) bool { return h.groups.get(g.Key) == g }

// Len is the number of groups registered.
func (h *Host) Len() int { return h.groups.len() }

// TakeTouched returns the groups touched since the last call, still
// registered, sorted by tenant then name, or all true if every group may
// have changed (the caller then walks them all, and must call Untouched
// for each); the marks are cleared.
func (h *Host) TakeTouched() (touched []*Entry, all bool) {
	touched, all = h.touched, h.allTouched
	h.touched, h.allTouched = nil, false
	for _, g := range touched {
		g.touched = false
	}
	if all {
		return nil, true
	}
	touched = slices.DeleteFunc(touched, func(g *Entry) bool { return h.groups.get(g.Key) != g })
	slices.SortFunc(touched, CompareEntries)
	return touched, false
}

// CompareEntries orders groups by tenant, then name: the order of
// Sorted, and of every walk of groups whose order reaches an output.
func CompareEntries(a, b *Entry) int {
	return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Name, b.Name))
}

// Untouched clears g's mark, for a walk of every group after TouchAll.
func (h *Host) Untouched(g *Entry) { g.touched = false }

// Touched reports whether g may have changed since the last inspect of
// changes (for the check that every change touched its group).
func (h *Host) Touched(g *Entry) bool { return g.touched || h.allTouched }

// Sorted returns every group in (tenant, name) order, so that the
// table's order never reaches an output. The slice is kept for the next
// call until an entry is added or removed (a caller may do either while
// it ranges over it: the next call makes a new one); it must not be
// changed.
func (h *Host) Sorted() []*Entry {
	if h.sorted != nil && len(h.sorted) == h.groups.len() {
		return h.sorted
	}
	if order := h.loadOrder; len(order) == h.groups.len() && !h.loadBroken {
		// Loading: the order the groups came in, if it is the order.
		h.loadOrder = nil
		if slices.IsSortedFunc(order, CompareEntries) {
			h.sorted = slices.Clip(order)
			return h.sorted
		}
	}
	out := slices.AppendSeq(make([]*Entry, 0, h.groups.len()), h.groups.all())
	slices.SortFunc(out, CompareEntries)
	h.sorted = slices.Clip(out)
	return h.sorted
}

// Timer keys: a kind byte, then the tenant and the group name each as its
// length, ":" and the bytes, then (for a member's timer) the member id, so
// that any tenant and group name parse back. Each group type has its own
// kind bytes, by which the shard routes a timer to the type.

// GroupTimer is the key of a group's timer of kind.
func GroupTimer(kind byte, k Key) string {
	var b strings.Builder
	b.WriteByte(kind)
	for _, part := range []string{k.Tenant, k.Name} {
		b.WriteString(strconv.Itoa(len(part)))
		b.WriteByte(':')
		b.WriteString(part)
	}
	return b.String()
}

// MemberTimer is the key of member m's timer of kind.
func MemberTimer(kind byte, k Key, m string) string { return GroupTimer(kind, k) + m }

// ParseTimer splits a group or member timer key.
func ParseTimer(key string) (kind byte, k Key, m string, ok bool) {
	if len(key) < 5 {
		return 0, Key{}, "", false
	}
	kind, rest := key[0], key[1:]
	var parts [2]string
	for i := range parts {
		n, tail, found := strings.Cut(rest, ":")
		l, err := strconv.Atoi(n)
		if !found || err != nil || l < 0 || l > len(tail) {
			return 0, Key{}, "", false
		}
		parts[i], rest = tail[:l], tail[l:]
	}
	return kind, Key{parts[0], parts[1]}, rest, true
}

// SortedKeys returns m's keys in order, so that map order never reaches
// an output.
func SortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Deadline is a member's deadline in Unix nanoseconds, 0 for none: a
// third of a time.Time's size, and a member has two.
type Deadline int64

// DeadlineAt is t as a Deadline.
func DeadlineAt(t time.Time) Deadline { return Deadline(t.UnixNano()) }

// IsZero reports whether d is none.
func (d Deadline) IsZero() bool { return d == 0 }

// After reports whether d is after e.
func (d Deadline) After(e Deadline) bool { return d > e }

// Time is d as a time.Time.
func (d Deadline) Time() time.Time { return time.Unix(0, int64(d)) }

// OrEmpty is *p, or "" for nil.
func OrEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Deref is *p for a rendering, "<nil>" for nil.
func Deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// Protocol is one (name, metadata) entry of a classic member's JoinGroup,
// in the member's order of preference: a classic group's member has them,
// and so has a classic member inside a consumer group.
type Protocol struct {
	Name string
	Meta []byte
}

// SameProtocols is Kafka's ClassicGroupMember.matches: the same
// protocols, in the same order, with byte-equal metadata.
func SameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Meta, y.Meta)
	})
}
