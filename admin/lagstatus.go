package admin

// Lag as time and as a status: the tracker keeps, for every committed
// offset of every group, a short history of samples (the committed
// offset, when it was committed, the partition's high watermark), and
// evaluates it the way Burrow evaluates a consumer's window of offsets,
// with two differences: Cohort is the coordinator, so it knows when each
// offset was committed (Burrow infers it from the order commits arrive
// on __consumer_offsets); and it also estimates how long the group will
// take to clear its lag, from how fast it consumed and how fast the
// partitions grew over the window.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"strings"
	"time"
)

// Status is a Burrow-like evaluation of a partition's or a group's lag.
type Status string

// The statuses, from best to worst; a group's is its worst partition's
// (groupStatus).
const (
	// StatusUnknown: the lag is not zero and there is not a full window
	// of samples yet (as Burrow, which evaluates only full windows).
	StatusUnknown Status = ""
	// StatusOK: no lag, or the consumer keeps up.
	StatusOK Status = "OK"
	// StatusWarn: the lag grew at every sample of the window while the
	// consumer committed progress: it is falling behind.
	StatusWarn Status = "WARN"
	// StatusStall: commits keep coming but repeat the same offset while
	// lag remains: the consumer is alive and stuck (a poison record, a
	// blocked handler).
	StatusStall Status = "STALL"
	// StatusStop: no commit for longer than the window while lag
	// remains: the consumer stopped (crashed, or left without a
	// replacement).
	StatusStop Status = "STOP"
	// StatusErr: the committed offset went backwards within the window
	// (Burrow's REWIND: a reset, or a consumer committing stale offsets).
	StatusErr Status = "ERR"
)

func (s Status) rank() int {
	switch s {
	case StatusOK:
		return 1
	case StatusWarn:
		return 2
	case StatusStall:
		return 3
	case StatusStop:
		return 4
	case StatusErr:
		return 5
	}
	return 0
}

// worse returns the worse of a and b; StatusUnknown is better than any.
func worse(a, b Status) Status {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// groupStatus is the status of a group whose partitions have the
// statuses parts, one for each partition it has, evaluated or not: the
// worst evaluated one's; StatusUnknown when none is evaluated, since a
// group's status cannot be better than its partitions allow; StatusOK
// for a group with no partitions, which has no lag.
func groupStatus(parts []Status) Status {
	if len(parts) == 0 {
		return StatusOK
	}
	s := StatusUnknown
	for _, p := range parts {
		s = worse(s, p)
	}
	return s
}

// LagSample is one partition's reading: the group's committed offset and
// when it was committed, and the partition's high watermark.
type LagSample struct {
	At        time.Time
	Committed int64
	CommitAt  time.Time
	End       int64
}

// Lag is the high watermark less the committed offset, never below 0.
func (s LagSample) Lag() int64 { return max(0, s.End-s.Committed) }

// LagPoint is a lag at a time, for trends.
type LagPoint struct {
	At  time.Time `json:"at"`
	Lag int64     `json:"lag"`
}

// LagTrackerConfig configures NewLagTracker.
type LagTrackerConfig struct {
	// Window is how many samples a status is evaluated over. Default 10
	// (with the default 5 s sampling, 45 s between its first and last).
	Window int
	// History is how many samples are kept for trends (at least Window).
	// Default 60.
	History int
	// MaxBytes bounds the histories' bytes in total (DefaultHistoryBytes
	// if 0; negative: no bound). While they are over it, the tracker
	// keeps fewer readings of history, down to Window, a quarter fewer
	// at each reading, the groups that change losing their older runs
	// first (a quiet group has one run a partition anyway); under half
	// of it, a reading more at each reading, up to History.
	MaxBytes int64
}

// DefaultHistoryBytes is LagTrackerConfig.MaxBytes's default: a million
// quiet groups of 4 partitions take about 48 MB of it.
const DefaultHistoryBytes = 256 << 20

// LagTracker keeps the samples. It is not safe for concurrent use; the
// API serialises it.
//
// Every reading observes every group at once (a group missing from one
// is forgotten, as is a partition missing from its group's reading), so
// a group's samples, and each of its partitions', are those of
// consecutive readings up to the group's last: the tracker numbers the
// readings and keeps the times of the last History+1 (one more than a
// history, for the groups a reading under way has not reached yet), and
// a sample's time is its reading's, exactly.
//
// A partition's history is kept as runs of equal samples (the same
// committed offset, commit time and high watermark), each with the
// number of the reading of its first sample: it lasts until the next
// run's, or the group's last reading. A quiet group, whose readings
// repeat, costs one run a partition however long the history, and a
// reading of it changes nothing but its last reading's number. The
// group's trend is runs likewise. A group's runs are encoded, with its
// partitions, in one byte slice of varints (encodeRun), and topic names
// are numbered (for good: like the names the tracker shared before) and
// shared between groups: a quiet group of 4 partitions
// costs about 120 bytes (TestLagTrackerQuietGroupBytes).
//
// The groups are a slice sorted by tenant then group, not a map: a
// reading observes them in that order, each at the next place, and a
// map of a million groups cost 129 bytes a group, the slice 56. A
// reading that adds or drops a group builds the slice anew (rebuild);
// one that does not, the common case, changes it in place.
type LagTracker struct {
	cfg    LagTrackerConfig
	groups []tracked
	// The reading under way: cur is the place in groups after the last
	// group it observed (where the next is, in the common case), last
	// that group's place (-1: a new one); rebuild, if not nil, is the
	// groups it has observed, when they are not the groups in their
	// order.
	cur, last int
	rebuild   []tracked
	// partial says the reading under way observes only some groups
	// (beginPartial), hint being the place of the next one (observeAt,
	// repeatAt).
	partial bool
	hint    int
	// done is the number of the last reading ended: every group in
	// groups was read by it, observed or not (lastOf).
	done   uint32
	topics []string          // topic names, by id
	ids    map[string]uint32 // topic ids, by name
	seq    uint32            // the number of the reading under way, or the last
	times  []int64           // readings' times (Unix ns), by number % len(times)
	// bytes is the histories' bytes (their slices' capacity); keep is
	// how many readings of history are kept now: History, fewer while
	// bytes is over MaxBytes (fit).
	bytes int64
	keep  int
	// observe's scratch, reused from group to group.
	keys []PartitionRef
	runs []lagRun
	enc  []byte
}

type groupRef struct{ Tenant, Group string }

func compareRefs(a, b groupRef) int {
	return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Group, b.Group))
}

// tracked is a group's history.
type tracked struct {
	ref  groupRef
	hist groupLag
}

// find returns the place of ref in the groups, or -1.
func (t *LagTracker) find(ref groupRef) int {
	if i, ok := slices.BinarySearchFunc(t.groups, ref, func(x tracked, r groupRef) int { return compareRefs(x.ref, r) }); ok {
		return i
	}
	return -1
}

// lookup returns the place in the groups of ref, or -1, and its
// history as the reading under way has it: the one the reading gave it
// if it observed it already (a group twice in a reading), else the last.
func (t *LagTracker) lookup(ref groupRef) (int, groupLag) {
	if t.partial {
		if t.hint >= 0 && t.hint < len(t.groups) && t.groups[t.hint].ref == ref {
			return t.hint, t.groups[t.hint].hist
		}
		if i := t.find(ref); i >= 0 {
			return i, t.groups[i].hist
		}
		return -1, nil
	}
	if n := len(t.rebuild); n > 0 && t.rebuild[n-1].ref == ref {
		return t.last, t.rebuild[n-1].hist
	}
	switch {
	case t.cur < len(t.groups) && t.groups[t.cur].ref == ref:
		return t.cur, t.groups[t.cur].hist
	case t.rebuild == nil && t.cur > 0 && t.groups[t.cur-1].ref == ref:
		return t.cur - 1, t.groups[t.cur-1].hist
	}
	if i := t.find(ref); i >= 0 {
		return i, t.groups[i].hist
	}
	return -1, nil
}

// record notes the reading's history g of ref, which is at place i of
// the groups (-1: none).
func (t *LagTracker) record(ref groupRef, i int, g groupLag) {
	if t.partial {
		// In place: the groups are those of the last reading (but for a
		// group new to it, which a partial reading should not have).
		if i < 0 {
			i, _ = slices.BinarySearchFunc(t.groups, ref, func(x tracked, r groupRef) int { return compareRefs(x.ref, r) })
			t.groups = slices.Insert(t.groups, i, tracked{ref: ref})
		}
		t.bytes += int64(cap(g)) - int64(cap(t.groups[i].hist))
		t.groups[i].hist = g
		return
	}
	if i >= 0 {
		// Readers between the reading's chunks (the API's) see the
		// group's history as the reading left it.
		t.groups[i].hist = g
	}
	if t.rebuild == nil {
		switch {
		case i >= 0 && i == t.cur:
			t.cur, t.last = i+1, i
			return
		case i >= 0 && i == t.cur-1:
			return // again
		}
		t.rebuild = append(make([]tracked, 0, len(t.groups)+1), t.groups[:t.cur]...)
	}
	if i >= 0 {
		t.cur = i + 1
	}
	t.last = i
	if n := len(t.rebuild); n > 0 && t.rebuild[n-1].ref == ref {
		t.rebuild[n-1].hist = g
		return
	}
	t.rebuild = append(t.rebuild, tracked{ref, g})
}

// PartitionRef names a group's partition.
type PartitionRef = TopicPartition

// groupLag is a group's history: the number of its last reading (4
// bytes, little-endian, rewritten in place at each reading), the last
// reading's GroupSample.Unsampled, and its partitions, by topic name and
// partition, each with its runs, then its trend's runs (the total lag in
// end):
//
//	uint32(last) varint(unsampled)
//	uvarint(partitions)
//	  uvarint(topic id) uvarint(uint32(partition)) uvarint(runs) run...
//	uvarint(trend runs) run...
//
// each run encoded against the one before it (encodeRun).
type groupLag []byte

// last is the number of the last reading that observed the group (or
// repeated it): readings that observe only some groups (beginPartial)
// leave the others' as it was, and lastOf is their last reading.
func (g groupLag) last() uint32 { return binary.LittleEndian.Uint32(g) }

// lastOf is the number of group g's last reading: the last reading
// ended, unless the reading under way observed it already.
func (t *LagTracker) lastOf(g groupLag) uint32 { return max(g.last(), t.done) }

// reader returns a reader of the group's partitions, and its
// unsampled partitions.
func (g groupLag) reader() (r histReader, unsampled int) {
	r = histReader{b: g, i: 4}
	return r, int(r.varint())
}

// lagRun is equal samples from reading start on: until the next run's
// start, or the group's last reading.
type lagRun struct {
	start     uint32
	committed int64
	commitAt  int64 // Unix ns
	end       int64
}

func (r lagRun) same(x lagRun) bool {
	return r.committed == x.committed && r.commitAt == x.commitAt && r.end == x.end
}

// addSample adds sample x (at reading x.start, the last) to runs, and
// drops the runs that end before reading lo.
func addSample(runs []lagRun, x lagRun, lo uint32) []lagRun {
	k := len(runs) - 1
	switch {
	case k >= 0 && runs[k].same(x):
		// The last run goes on.
	case k >= 0 && runs[k].start == x.start:
		// A second sample of one reading (a group twice in it): it
		// replaces the first.
		runs = runs[:k]
		if k == 0 || !runs[k-1].same(x) {
			runs = append(runs, x)
		}
	default:
		runs = append(runs, x)
	}
	drop := 0
	for drop+1 < len(runs) && runs[drop+1].start <= lo {
		drop++
	}
	return slices.Delete(runs, 0, drop)
}

// encodeRun appends run x to b, against the run before it in the
// history (zero for the first, and for the trend's first: a partition's
// first run is against the last partition's last, whose offsets and
// commit time are often near): the differences of their starts,
// committed offsets and commit times (in ms when it is whole ms, as the
// coordinator's are), and the lag (end less committed offset).
func encodeRun(b []byte, prev, x lagRun) []byte {
	b = binary.AppendVarint(b, int64(x.start)-int64(prev.start))
	b = binary.AppendVarint(b, x.committed-prev.committed)
	if d := x.commitAt - prev.commitAt; d%1e6 == 0 {
		b = binary.AppendUvarint(b, zigzag(d/1e6)<<1)
	} else {
		b = binary.AppendUvarint(b, 1)
		b = binary.AppendVarint(b, d)
	}
	return binary.AppendVarint(b, x.end-x.committed)
}

// zigzag is v as binary.AppendVarint encodes it, small when v is near 0.
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// histReader reads a groupLag.
type histReader struct {
	b    []byte
	i    int
	prev lagRun // the last run read
}

func (r *histReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.i:])
	r.i += n
	return v
}

func (r *histReader) varint() int64 {
	v, n := binary.Varint(r.b[r.i:])
	r.i += n
	return v
}

// part reads a partition's header: its topic's id, the partition, and
// how many runs follow.
func (r *histReader) part() (topic uint32, partition int32, runs int) {
	return uint32(r.uvarint()), int32(uint32(r.uvarint())), int(r.uvarint())
}

// run reads the next run (encodeRun).
func (r *histReader) run() lagRun {
	var x lagRun
	x.start = uint32(int64(r.prev.start) + r.varint())
	x.committed = r.prev.committed + r.varint()
	if u := r.uvarint(); u&1 == 0 {
		x.commitAt = r.prev.commitAt + unzigzag(u>>1)*1e6
	} else {
		x.commitAt = r.prev.commitAt + r.varint()
	}
	x.end = x.committed + r.varint()
	r.prev = x
	return x
}

// trend reads the number of the trend's runs, which follow, after the
// partitions'.
func (r *histReader) trend() int {
	r.prev = lagRun{}
	return int(r.uvarint())
}

// samples reads n runs from r and appends to out their samples of the
// readings from lo to hi, oldest first (out, with room enough, a caller
// can keep on its stack: the sampler evaluates every group at every
// reading).
func (t *LagTracker) samples(out []LagSample, r *histReader, n int, lo, hi uint32) []LagSample {
	var prev lagRun
	for k := range n {
		x := r.run()
		if k > 0 {
			out = t.appendSamples(out, prev, max(prev.start, lo), int64(x.start)-1)
		}
		prev = x
	}
	if n > 0 {
		out = t.appendSamples(out, prev, max(prev.start, lo), int64(hi))
	}
	return out
}

// appendSamples appends run x's samples of readings from to to.
func (t *LagTracker) appendSamples(out []LagSample, x lagRun, from uint32, to int64) []LagSample {
	for s := int64(from); s <= to; s++ {
		at := t.times[s%int64(len(t.times))]
		out = append(out, LagSample{At: time.Unix(0, at), Committed: x.committed, CommitAt: time.Unix(0, x.commitAt), End: x.end})
	}
	return out
}

// since is the first of the last n readings to hi (0 if fewer).
func since(hi uint32, n int) uint32 {
	return uint32(max(0, int64(hi)-int64(n)+1))
}

// NewLagTracker returns an empty tracker.
func NewLagTracker(cfg LagTrackerConfig) *LagTracker {
	if cfg.Window < 2 {
		cfg.Window = 10
	}
	if cfg.History < cfg.Window {
		cfg.History = max(60, cfg.Window)
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultHistoryBytes
	}
	return &LagTracker{cfg: cfg, ids: map[string]uint32{}, times: make([]int64, cfg.History+1), keep: cfg.History}
}

// GroupSample is one group's reading: a sample per committed offset
// whose partition's high watermark is known.
type GroupSample struct {
	Tenant, Group string
	Partitions    map[PartitionRef]LagSample
	// Unsampled counts the group's other partitions, which have no
	// sample: a committed offset on a partition whose high watermark is
	// not known here. They have no status (StatusUnknown).
	Unsampled int
}

// Observe records one reading of every group. A group missing from it is
// forgotten (deleted, or moved to another node), as is a partition
// missing from its group's reading (offsets deleted).
func (t *LagTracker) Observe(at time.Time, groups []GroupSample) {
	t.begin(at)
	for _, gs := range groups {
		t.observe(at, gs)
	}
	t.end()
}

// begin starts a reading at at: observe each group of it, then end.
func (t *LagTracker) begin(at time.Time) {
	t.seq++
	t.times[t.seq%uint32(len(t.times))] = at.UnixNano()
	t.cur, t.rebuild, t.partial = 0, nil, false
}

// beginPartial starts a reading at at that observes (or repeats) only
// the groups that may have changed, each at its place in the groups
// (observeAt, repeatAt), then endPartial: every other group's sample is
// its last one, and its history needs no change (settled), not even its
// last reading's number (lastOf).
func (t *LagTracker) beginPartial(at time.Time) {
	t.begin(at)
	t.partial = true
}

// endPartial ends a reading begun with beginPartial.
func (t *LagTracker) endPartial() {
	t.partial, t.done = false, t.seq
	t.fit()
}

// observeAt is observe of the group at place i of the groups (where a
// partial reading finds it; a reading of every group finds its groups
// by its own order, and takes no hint).
func (t *LagTracker) observeAt(i int, at time.Time, gs GroupSample) groupLag {
	t.hint = i
	return t.observe(at, gs)
}

// repeatAt is repeat of the group at place i of the groups, in a
// partial reading.
func (t *LagTracker) repeatAt(i int, tenant, group string, at time.Time) (now groupLag, stable, settled, ok bool) {
	t.hint = i
	return t.repeat(tenant, group, at)
}

func comparePartitions(a, b PartitionRef) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// observe records one group's sample of a reading, and returns the
// group's history now; gs may be reused once it returns. A group observed
// twice in a reading keeps the later sample.
func (t *LagTracker) observe(at time.Time, gs GroupSample) groupLag {
	seq := t.seq
	t.times[seq%uint32(len(t.times))] = at.UnixNano()
	lo := since(seq, t.keep)
	ref := groupRef{gs.Tenant, gs.Group}
	at0, g := t.lookup(ref)
	// The reading's partitions, in the history's order: partitions gone
	// from it go, the rest are kept, new ones added.
	keys := t.keys[:0]
	for p := range gs.Partitions {
		keys = append(keys, p)
	}
	slices.SortFunc(keys, comparePartitions)
	t.keys = keys
	var old histReader
	oldParts := 0
	if g != nil {
		old, _ = g.reader()
		oldParts = int(old.uvarint())
	}
	// The old partition under the reader, if any left.
	var oldTopic uint32
	var oldPart int32
	var oldRuns int
	nextOld := func() bool {
		if oldParts == 0 {
			return false
		}
		oldParts--
		oldTopic, oldPart, oldRuns = old.part()
		return true
	}
	skipRuns := func(n int) {
		for range n {
			old.run()
		}
	}
	haveOld := nextOld()
	enc := binary.LittleEndian.AppendUint32(t.enc[:0], seq)
	enc = binary.AppendVarint(enc, int64(gs.Unsampled))
	enc = binary.AppendUvarint(enc, uint64(len(keys)))
	var prev lagRun // the last run encoded
	var total int64
	for _, p := range keys {
		s := gs.Partitions[p]
		runs := t.runs[:0]
		c := 1
		for haveOld {
			if c = comparePartitions(PartitionRef{Topic: t.topics[oldTopic], Partition: oldPart}, p); c >= 0 {
				break
			}
			skipRuns(oldRuns)
			haveOld = nextOld()
		}
		topic := oldTopic
		if haveOld && c == 0 {
			for range oldRuns {
				runs = append(runs, old.run())
			}
			haveOld = nextOld()
		} else {
			topic = t.topicID(p.Topic)
		}
		runs = addSample(runs, lagRun{start: seq, committed: s.Committed, commitAt: s.CommitAt.UnixNano(), end: s.End}, lo)
		enc = binary.AppendUvarint(enc, uint64(topic))
		enc = binary.AppendUvarint(enc, uint64(uint32(p.Partition)))
		enc = binary.AppendUvarint(enc, uint64(len(runs)))
		for _, x := range runs {
			enc = encodeRun(enc, prev, x)
			prev = x
		}
		t.runs = runs
		total += s.Lag()
	}
	for haveOld {
		skipRuns(oldRuns)
		haveOld = nextOld()
	}
	trend := t.runs[:0]
	if g != nil {
		for range old.trend() {
			trend = append(trend, old.run())
		}
	}
	trend = addSample(trend, lagRun{start: seq, end: total}, lo)
	enc = binary.AppendUvarint(enc, uint64(len(trend)))
	prev = lagRun{}
	for _, x := range trend {
		enc = encodeRun(enc, prev, x)
		prev = x
	}
	t.runs, t.enc = trend, enc
	// A quiet group's history is as it was, but for its last reading.
	switch {
	case g != nil && bytes.Equal(enc[4:], g[4:]):
		binary.LittleEndian.PutUint32(g, seq)
	case cap(g) >= len(enc) && cap(g) <= 2*len(enc):
		g = append(g[:0], enc...)
	default:
		g = bytes.Clone(enc)
	}
	t.record(ref, at0, g)
	return g
}

// repeat records a group's sample of the reading under way that is equal
// to its last one (the same partitions, each with the same committed
// offset, commit time and high watermark, and the same unsampled count)
// without being given it: what observe would do with that sample. For a
// group whose history needs no trimming (no run ends before the
// history's first reading) that is rewriting its last reading's number;
// else the group's last sample is rebuilt from its history and observed.
//
// ok is false, and nothing is done, unless the group's last reading is
// the one before this (a group new to the tracker, or observed twice in
// this reading, is observe's). stable reports that the group's status
// (GroupStatus) is as it was at its last reading, whatever now: every
// partition's window, then and now, is all its last run's (Window equal
// samples: OK with no lag, else STOP, not depending on times). settled
// says it is stable and each partition, and the trend, is one run: the
// group's history needs nothing from the next readings that repeat it,
// which may leave it out (beginPartial).
//
// The group's history now is returned. The group is found where the
// reading is in the tracker's groups (the next place, in the common
// case), without a search.
func (t *LagTracker) repeat(tenant, group string, at time.Time) (now groupLag, stable, settled, ok bool) {
	seq := t.seq
	ref := groupRef{tenant, group}
	i, g := t.lookup(ref)
	if g == nil || t.lastOf(g) != seq-1 {
		return g, false, false, false
	}
	lo := since(seq, t.keep)
	trim := false
	stable, single := true, true
	r, _ := g.reader()
	// runs reads n runs: one ends before lo if the second starts at or
	// before it (addSample's drop); the last starts where.
	runs := func(n int) (last uint32) {
		single = single && n == 1
		for k := range n {
			x := r.run()
			if k == 1 && x.start <= lo {
				trim = true
			}
			last = x.start
		}
		return last
	}
	for range int(r.uvarint()) {
		_, _, n := r.part()
		if last := runs(n); int64(last) > int64(seq)-int64(t.cfg.Window) {
			stable = false
		}
	}
	runs(r.trend())
	if trim {
		now = t.observe(at, t.lastSample(tenant, group, g))
		return now, stable, stable && t.settledOf(now), true
	}
	binary.LittleEndian.PutUint32(g, seq)
	t.record(ref, i, g)
	return g, stable, stable && single, true
}

// settledOf reports whether history g, as of the reading under way, is
// settled (repeat): each of its partitions, and its trend, one run, each
// partition's begun Window readings ago or more.
func (t *LagTracker) settledOf(g groupLag) bool {
	r, _ := g.reader()
	for range int(r.uvarint()) {
		_, _, n := r.part()
		if n != 1 {
			return false
		}
		if x := r.run(); int64(x.start) > int64(t.seq)-int64(t.cfg.Window) {
			return false
		}
	}
	return r.trend() == 1
}

// lastSample is group g's last sample, as observe was given it (but for
// the samples' At, which observe does not read).
func (t *LagTracker) lastSample(tenant, group string, g groupLag) GroupSample {
	r, unsampled := g.reader()
	n := int(r.uvarint())
	gs := GroupSample{Tenant: tenant, Group: group, Partitions: make(map[PartitionRef]LagSample, n), Unsampled: unsampled}
	for range n {
		topic, partition, runs := r.part()
		var x lagRun
		for range runs {
			x = r.run()
		}
		gs.Partitions[PartitionRef{Topic: t.topics[topic], Partition: partition}] = LagSample{Committed: x.committed, CommitAt: time.Unix(0, x.commitAt), End: x.end}
	}
	return gs
}

// end ends a reading: a group not in it is forgotten.
func (t *LagTracker) end() {
	if t.rebuild != nil {
		// Sorted (a reading may come in any order), a group twice in
		// it keeping its later history.
		slices.SortStableFunc(t.rebuild, func(a, b tracked) int { return compareRefs(a.ref, b.ref) })
		out := t.rebuild[:0]
		for i, x := range t.rebuild {
			if i+1 < len(t.rebuild) && t.rebuild[i+1].ref == x.ref {
				continue
			}
			out = append(out, x)
		}
		clear(t.rebuild[len(out):])
		t.groups, t.rebuild = slices.Clip(out), nil
	} else {
		clear(t.groups[t.cur:]) // not in the reading
		t.groups = t.groups[:t.cur]
	}
	t.done = t.seq
	t.bytes = 0
	for _, x := range t.groups {
		t.bytes += int64(cap(x.hist))
	}
	t.fit()
}

// fit sets how many readings of history the next reading keeps, so that
// the histories stay within MaxBytes (LagTrackerConfig): a quarter fewer
// while over it, never fewer than Window; one more while under half of
// it, up to History. A group's history is cut to it when the group is
// next observed (every reading, for a group that changes), or repeated
// with a run older than it.
func (t *LagTracker) fit() {
	switch {
	case t.cfg.MaxBytes > 0 && t.bytes > t.cfg.MaxBytes:
		t.keep = max(t.cfg.Window, t.keep*3/4)
	case t.keep < t.cfg.History && (t.cfg.MaxBytes < 0 || t.bytes < t.cfg.MaxBytes/2):
		t.keep++
	}
}

// HistoryBytes returns the histories' bytes, and how many readings of
// history the tracker keeps now (LagTrackerConfig.MaxBytes).
func (t *LagTracker) HistoryBytes() (bytes int64, readings int) { return t.bytes, t.keep }

// topicID returns the id of a topic name, numbering it if new.
func (t *LagTracker) topicID(s string) uint32 {
	if id, ok := t.ids[s]; ok {
		return id
	}
	s = strings.Clone(s)
	id := uint32(len(t.topics))
	t.topics = append(t.topics, s)
	t.ids[s] = id
	return id
}

// PartitionLag is a partition's evaluation.
type PartitionLag struct {
	Status Status
	// TimeToClear is the estimated time until the lag is consumed at the
	// window's rates; 0 with no lag; nil when it is not shrinking.
	TimeToClear *time.Duration
	History     []LagPoint // oldest first
}

// GroupLag is a group's evaluation.
type GroupLag struct {
	Status      Status
	TimeToClear *time.Duration
	Trend       []LagPoint
	Partitions  map[PartitionRef]PartitionLag
}

// Group evaluates a group at now; ok is false if it has no samples.
func (t *LagTracker) Group(tenant, group string, now time.Time) (GroupLag, bool) {
	g := t.history(tenant, group)
	if g == nil {
		return GroupLag{}, false
	}
	r, unsampled := g.reader()
	hi := t.lastOf(g)
	lo := since(hi, t.keep)
	parts := int(r.uvarint())
	out := GroupLag{Partitions: make(map[PartitionRef]PartitionLag, parts)}
	var lag, consumed, produced int64
	var span time.Duration
	statuses := make([]Status, 0, parts+unsampled)
	for range unsampled {
		statuses = append(statuses, StatusUnknown)
	}
	for range parts {
		topic, partition, runs := r.part()
		ss := t.samples(nil, &r, runs, lo, hi)
		w := ss[max(0, len(ss)-t.cfg.Window):]
		pl := PartitionLag{Status: evaluate(w, now, t.cfg.Window)}
		first, last := w[0], w[len(w)-1]
		pl.TimeToClear = timeToClear(last.Lag(), last.Committed-first.Committed, last.End-first.End, last.At.Sub(first.At))
		for _, s := range ss {
			pl.History = append(pl.History, LagPoint{At: s.At, Lag: s.Lag()})
		}
		out.Partitions[PartitionRef{Topic: t.topics[topic], Partition: partition}] = pl
		statuses = append(statuses, pl.Status)
		lag += last.Lag()
		consumed += last.Committed - first.Committed
		produced += last.End - first.End
		span = max(span, last.At.Sub(first.At))
	}
	for _, s := range t.samples(nil, &r, r.trend(), lo, hi) {
		out.Trend = append(out.Trend, LagPoint{At: s.At, Lag: s.End})
	}
	out.Status = groupStatus(statuses)
	out.TimeToClear = timeToClear(lag, consumed, produced, span)
	return out, true
}

// GroupStatus is Group's Status alone, without the history and time to
// clear it also builds; ok is false if the group has no samples.
func (t *LagTracker) GroupStatus(tenant, group string, now time.Time) (Status, bool) {
	g := t.history(tenant, group)
	if g == nil {
		return StatusUnknown, false
	}
	return t.statusOf(g, now), true
}

// history is the group's history, nil if it has none.
func (t *LagTracker) history(tenant, group string) groupLag {
	ref := groupRef{tenant, group}
	if n := len(t.rebuild); n > 0 && t.rebuild[n-1].ref == ref {
		return t.rebuild[n-1].hist // new to the reading under way
	}
	if i := t.find(ref); i >= 0 {
		return t.groups[i].hist
	}
	return nil
}

// statusOf is GroupStatus of the group whose history is g.
func (t *LagTracker) statusOf(g groupLag, now time.Time) Status {
	st, _ := t.evaluateOf(g, now)
	return st
}

// evaluateOf is Group's Status and TimeToClear of the group whose history
// is g, without the histories and trend Group also builds: what a scrape
// of /metrics reports for each of up to a quarter of a million groups.
func (t *LagTracker) evaluateOf(g groupLag, now time.Time) (Status, *time.Duration) {
	r, unsampled := g.reader()
	hi := t.lastOf(g)
	lo := since(hi, t.cfg.Window)
	parts := int(r.uvarint())
	// On the stack for most groups: the sampler evaluates a million of
	// them in the first readings after a load.
	var sbuf [16]Status
	statuses := sbuf[:0]
	for range unsampled {
		statuses = append(statuses, StatusUnknown)
	}
	var buf [16]LagSample
	var lag, consumed, produced int64
	var span time.Duration
	for range parts {
		_, _, runs := r.part()
		w := buf[:0]
		if t.cfg.Window > len(buf) {
			w = nil
		}
		w = t.samples(w, &r, runs, lo, hi)
		statuses = append(statuses, evaluate(w, now, t.cfg.Window))
		first, last := w[0], w[len(w)-1]
		lag += last.Lag()
		consumed += last.Committed - first.Committed
		produced += last.End - first.End
		span = max(span, last.At.Sub(first.At))
	}
	return groupStatus(statuses), timeToClear(lag, consumed, produced, span)
}

// timeToClear estimates how long lag takes to clear when consumed grew
// and produced were added over span: lag over the net consumption rate.
func timeToClear(lag, consumed, produced int64, span time.Duration) *time.Duration {
	if lag == 0 {
		d := time.Duration(0)
		return &d
	}
	if span <= 0 || consumed <= produced {
		return nil
	}
	d := time.Duration(float64(lag) / float64(consumed-produced) * float64(span)).Round(time.Millisecond)
	return &d
}

// evaluate is Burrow's evaluation of a window of samples (oldest first),
// in this order: no lag now is OK; fewer samples than a full window (of
// size window) is unknown; a committed offset that went back is
// ERR; no commit for longer than the window spans is STOP; commits that
// did not move the offset are STALL; a lag that grew at every step is
// WARN; anything else is OK.
func evaluate(w []LagSample, now time.Time, window int) Status {
	last := w[len(w)-1]
	if last.Lag() == 0 {
		return StatusOK
	}
	if len(w) < max(2, window) {
		return StatusUnknown
	}
	first := w[0]
	for i := 1; i < len(w); i++ {
		if w[i].Committed < w[i-1].Committed {
			return StatusErr
		}
	}
	span := last.At.Sub(first.At)
	if now.Sub(last.CommitAt) > span || !last.CommitAt.After(first.CommitAt) {
		return StatusStop
	}
	if last.Committed == first.Committed {
		return StatusStall
	}
	growing := last.Lag() > first.Lag()
	for i := 1; i < len(w) && growing; i++ {
		growing = w[i].Lag() >= w[i-1].Lag()
	}
	if growing {
		return StatusWarn
	}
	return StatusOK
}
