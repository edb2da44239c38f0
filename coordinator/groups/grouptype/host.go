// Package grouptype is what every group type of a group-coordinator shard
// shares: the Host through which a type's handlers emit records (applied
// at once through the shard's Replay), set timers, reply, report group
// events, read the tenant's topic catalog and the configuration, and draw
// ids from the shard's seeded generator; the registry of groups by
// (tenant, group) that the types' replays register their groups in; the
// tenants' limits; timer keys; and the parts of a rebalance's story the
// types' events share.
//
// It holds no group type's rules: package classic, consumer and migration
// import it, never each other through it. Like the shard, it must not do
// I/O, read a clock, log, start goroutines or take locks.
package grouptype

import (
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/offsets"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AllGroupOperations is the authorized-operations bit field of a group
// with no authorizer: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS and
// ALTER_CONFIGS (§15), as DescribeGroups and ConsumerGroupDescribe report
// it.
const AllGroupOperations = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11

// Host is one shard's state that is no group type's own, and the output
// of the event being handled. The shard (package groups) owns it; each
// group type holds a pointer to it.
type Host struct {
	Cfg Config
	// Rng draws member and group ids, seeded through Config, so a run is
	// reproducible from its seed.
	Rng *rand.ChaCha8
	// Offs is the committed offsets and the transactional offsets not
	// yet committed or aborted.
	Offs *offsets.Book

	// groups is the registry (registry.go, table.go); tenantGroups
	// counts each tenant's entries in it (limits.go).
	groups       groupTable
	tenantGroups map[string]int
	// sorted is groups in (tenant, name) order, made again only after an
	// entry is added or removed (Sorted): listing a million quiet groups,
	// or inspecting them at every lag sample, sorts none of them.
	sorted []*Entry
	// loadOrder is the groups in the order a load registered them, while
	// it loads and none was forgotten (loadBroken): a load replays a
	// kind's records in (tenant, name) order, so that this is often
	// Sorted's order already, and a million groups need no sort (Sorted).
	loadOrder  []*Entry
	loadBroken bool
	// touched are the groups touched since the last inspect of changes
	// (Touch); allTouched: every group may have changed. Listed is how
	// many groups that inspect listed (Entry.Inspected not 0), less those
	// forgotten since.
	touched    []*Entry
	allTouched bool
	// unswept are the groups touched since the last retention sweep
	// (TakeUnswept); allUnswept: every group may have changed.
	unswept    []*Entry
	allUnswept bool
	Listed     int
	// catalogs are the newest topic catalog a request brought, by
	// tenant: each organisation has its own topics, by the names its
	// clients know them by.
	catalogs map[string]*machine.Catalog
	// loaded: the shard has loaded, so it serves and publishes its group
	// counts (Config.Counts).
	loaded bool

	// Reserve reserves the offsets of the shard's __consumer_offsets
	// partition (reserve.go); replayed counts the records a load
	// replayed besides reservations.
	Reserve  Reserver
	replayed int64

	// The output of the event being handled: Rec's Replay is the shard's.
	Rec machine.Recorder
	Out machine.Output
}

// NewHost returns the host of an empty shard whose records replay is.
func NewHost(cfg Config, replay func(machine.Record) error) *Host {
	h := &Host{
		Cfg:          cfg,
		Rng:          rand.NewChaCha8(cfg.Seed),
		tenantGroups: map[string]int{},
		Reserve:      Reserver{Block: cfg.OffsetsTopicBlock},
	}
	h.Rec.Replay = replay
	h.Offs = offsets.NewIn(cfg.Shard, &h.Rec, h)
	h.Offs.StartLoad() // until SetLoaded
	return h
}

// SetLoaded notes that the shard has loaded and publishes its group
// counts (Config.Counts) from then on.
func (h *Host) SetLoaded() {
	h.loaded = true
	h.loadOrder, h.loadBroken = nil, false
	h.Offs.Loaded()
	h.Reserve.Start(h.replayed)
	if h.Cfg.Counts != nil {
		for tenant, n := range h.tenantGroups {
			h.Cfg.Counts.Set(h.Cfg.Shard, tenant, n)
		}
	}
}

// Replayed counts a record a load replayed (none once loaded): the
// offsets they may take are what the load's reservation covers.
func (h *Host) Replayed() {
	if !h.loaded {
		h.replayed++
	}
}

// Flush returns the output gathered for the current event, led by a
// reservation of __consumer_offsets offsets if one is due (Reserver).
func (h *Host) Flush() machine.Output {
	out := h.Out
	out.Records = h.Rec.Take()
	if h.loaded {
		if at, ok := h.Reserve.Next(len(out.Records)); ok {
			h.Rec.Emit(record.OffsetsTopicKey{Shard: h.Cfg.Shard}.Key(), record.OffsetsTopic{Reserved: at}.Encode())
			out.Records = append(h.Rec.Take(), out.Records...)
		}
	}
	h.Out = machine.Output{}
	return out
}

// Reply answers request to with resp.
func (h *Host) Reply(to machine.RequestID, resp kmsg.Response) {
	h.Out.Replies = append(h.Out.Replies, machine.Reply{To: to, Resp: resp})
}

// Emit writes a record and applies it through the shard's Replay.
func (h *Host) Emit(key, value []byte) { h.Rec.Emit(key, value) }

// Timer sets the timer key to fire at at (zero: cancels it).
func (h *Host) Timer(key string, at time.Time) {
	h.Out.Timers = append(h.Out.Timers, machine.Timer{Key: key, At: at})
}

// Report adds a group event to the output.
func (h *Host) Report(e observe.GroupEvent) {
	h.Out.Events = append(h.Out.Events, e)
}

// NoteCatalog keeps the newest topic catalog of tenant a request
// brought.
func (h *Host) NoteCatalog(tenant string, c *machine.Catalog) {
	if cur := h.catalogs[tenant]; c != nil && (cur == nil || c.Version >= cur.Version) {
		if h.catalogs == nil {
			h.catalogs = map[string]*machine.Catalog{}
		}
		h.catalogs[tenant] = c
		if cur == nil || c.Version > cur.Version {
			h.TouchAll()
		}
	}
}

// Catalog is the newest topic catalog of tenant, nil if no request of
// the tenant brought one.
func (h *Host) Catalog(tenant string) *machine.Catalog { return h.catalogs[tenant] }

// GroupKey is the group's record key.
func (h *Host) GroupKey(k Key) record.GroupKey {
	return record.GroupKey{Shard: h.Cfg.Shard, Tenant: k.Tenant, Group: k.Name}
}

// NewGroupID mints cgp_<ULID>: 48 bits of Unix milliseconds and 80 random
// bits, in Crockford's base32.
func (h *Host) NewGroupID(now time.Time) string {
	var u [16]byte
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		u[i] = byte(ms)
		ms >>= 8
	}
	binary.BigEndian.PutUint64(u[6:], h.Rng.Uint64())
	binary.BigEndian.PutUint16(u[14:], uint16(h.Rng.Uint64()))
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

// MemberID is Kafka's generateMemberId: the client id (or instance id)
// and a random UUID.
func (h *Host) MemberID(prefix string) string {
	var u [16]byte
	binary.BigEndian.PutUint64(u[:8], h.Rng.Uint64())
	binary.BigEndian.PutUint64(u[8:], h.Rng.Uint64())
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

// UUID returns a random id in Kafka's Uuid.toString form (22 characters
// of unpadded URL-safe base64), as Kafka's v0 member ids.
func (h *Host) UUID() string {
	var u [16]byte
	for i := 0; i < 16; i += 8 {
		v := h.Rng.Uint64()
		for j := range 8 {
			u[i+j] = byte(v >> (8 * j))
		}
	}
	return base64.RawURLEncoding.EncodeToString(u[:])
}
