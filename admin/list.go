package admin

// GET /api/v1/groups: the groups of the last lag sample, filtered,
// sorted and paged on the server, so that an estate of a million groups
// answers a page in the time it takes to scan an index, never building
// every group's summary. The sampler builds the index once per reading
// (buildIndex): each group's total lag and status, and its position in
// each order. A request walks the order it asks for from its cursor,
// keeps the groups its filters match, and builds the summaries of one
// page. In a cluster the node asked merges the pages every node gives
// for the same query (cluster.go): each page is sorted by the same key,
// so the first limit of the merge are the cluster's.

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/topics"
)

// List limits: a page is 1,000 groups unless the request says otherwise,
// and never more than 10,000.
const (
	defaultListLimit = 1000
	maxListLimit     = 10000
)

// The list's orders.
const (
	sortName   = "name"   // by tenant (the default organisation's first), then group
	sortLag    = "lag"    // total lag, largest first
	sortStatus = "status" // worst status first: ERR, STOP, STALL, WARN, not evaluated, OK
)

// listIndex is the last sample's groups as the list finds them.
type listIndex struct {
	entries []listEntry // by tenant, then group
	// orders are the entries' positions by lag and by status, made by
	// the first request that asks for either: the sampler itself does
	// no more than a pass over the groups.
	orders *lazyOrders
}

type lazyOrders struct {
	lagOnce, statusOnce sync.Once
	byLag, byStatus     []int32
}

// listEntry is a group of the last sample (API.last[i]).
// (16 bytes: a million of them are the list of a million groups.)
type listEntry struct {
	lag  int64
	i    int32
	code statusCode
}

// status is the group's lag status.
func (e listEntry) status() Status { return e.code.status() }

// statusCode is a Status in a byte: its rank.
type statusCode uint8

var statusOfRank = [...]Status{StatusUnknown, StatusOK, StatusWarn, StatusStall, StatusStop, StatusErr}

func codeOf(s Status) statusCode    { return statusCode(s.rank()) }
func (c statusCode) status() Status { return statusOfRank[c] }

// listEntryOf is group s (last[i]) as the list finds it, its history
// being hist, evaluated at now (under a.mu, once the tracker has
// observed it).
func (a *API) listEntryOf(i int, s groups.Summary, shares map[TopicPartition]SharePartition, ends map[TopicPartition]PartitionOffsets, hist groupLag, now time.Time) listEntry {
	e := listEntry{i: int32(i), lag: totalLag(s.Tenant, s.Offsets, shares, ends)}
	e.code = codeOf(a.statusOf(hist, e.lag, now))
	return e
}

// newListIndex indexes a sample's groups. The coordinator reads them
// sorted by tenant, then group, which is the list's order by name: only
// a source that does not needs a sort. sorted says the caller knows
// entries are (no need to look).
func newListIndex(entries []listEntry, last []groups.Summary, sorted bool) listIndex {
	byName := func(x, y listEntry) int {
		return cmp.Or(cmp.Compare(last[x.i].Tenant, last[y.i].Tenant), cmp.Compare(last[x.i].Group, last[y.i].Group))
	}
	if !sorted && !slices.IsSortedFunc(entries, byName) {
		slices.SortFunc(entries, byName)
	}
	return listIndex{entries: entries, orders: &lazyOrders{}}
}

// order is the entries' positions in order sort.
func (ix listIndex) order(sort string, last []groups.Summary) func(i int) int32 {
	if sort == sortName {
		return func(i int) int32 { return int32(i) }
	}
	o := ix.orders
	if sort == sortLag {
		o.lagOnce.Do(func() {
			o.byLag = make([]int32, len(ix.entries))
			for i := range o.byLag {
				o.byLag[i] = int32(i)
			}
			slices.SortStableFunc(o.byLag, func(x, y int32) int {
				return ix.key(sortLag, x, last).compare(ix.key(sortLag, y, last))
			})
		})
		return func(i int) int32 { return o.byLag[i] }
	}
	// By status: a counting sort over the few statuses, stable over the
	// order by name, so one pass (the page's default order costs no
	// sort of a million groups).
	o.statusOnce.Do(func() {
		var counts [8]int
		for _, e := range ix.entries {
			counts[7-statusSortRank(e.status())]++
		}
		at := 0
		for r, n := range counts {
			counts[r] = at
			at += n
		}
		o.byStatus = make([]int32, len(ix.entries))
		for i, e := range ix.entries {
			r := 7 - statusSortRank(e.status())
			o.byStatus[counts[r]] = int32(i)
			counts[r]++
		}
	})
	return func(i int) int32 { return o.byStatus[i] }
}

// totalLag is a group's lag: over its committed offsets, and a share
// group's share partitions, whose partitions' end offsets ends knows.
func totalLag(tenant string, offsets groups.Offsets, shares map[TopicPartition]SharePartition, ends map[TopicPartition]PartitionOffsets) int64 {
	var lag int64
	for o := range offsets.All() {
		// The log's name of the group's topic (topics.Internal).
		if po, ok := ends[TopicPartition{Topic: topics.Internal(tenant, o.Topic), Partition: o.Partition}]; ok && o.Offset >= 0 {
			lag += max(0, po.End-o.Offset)
		}
	}
	for tp, p := range shares {
		if po, ok := ends[TopicPartition{Topic: topics.Internal(tenant, tp.Topic), Partition: tp.Partition}]; ok {
			lag += p.Lag(po.End)
		}
	}
	return lag
}

// statusOf is a group's status as the list shows it, from its history g
// (nil: none): the tracker's, or OK for a group it has not evaluated yet
// that has no lag (under a.mu).
func (a *API) statusOf(g groupLag, lag int64, now time.Time) Status {
	if g != nil {
		return a.tracker.statusOf(g, now)
	}
	if lag == 0 {
		return StatusOK
	}
	return StatusUnknown
}

// listKey is a group's place in an order: rank first (0 by name; the
// lag, negated, by lag; the status's, negated, by status), then tenant
// (the default organisation's, "", first) and group. Cursors carry the
// key of a page's last group.
type listKey struct {
	Rank   int64  `json:"r"`
	Tenant string `json:"t"`
	Group  string `json:"g"`
}

func (k listKey) compare(o listKey) int {
	return cmp.Or(cmp.Compare(k.Rank, o.Rank), cmp.Compare(k.Tenant, o.Tenant), cmp.Compare(k.Group, o.Group))
}

// keyOf is the key of a group with this lag and status in order sort.
func keyOf(sort, tenant, group string, lag int64, st Status) listKey {
	k := listKey{Tenant: tenant, Group: group}
	switch sort {
	case sortLag:
		k.Rank = -lag
	case sortStatus:
		k.Rank = -int64(statusSortRank(st))
	}
	return k
}

// statusSortRank orders statuses worst first; a group not evaluated
// comes before an OK one: it may be anything.
func statusSortRank(s Status) int {
	if s == StatusUnknown {
		return 2
	}
	if s == StatusOK {
		return 1
	}
	return s.rank() + 1
}

func (ix listIndex) key(sort string, pos int32, last []groups.Summary) listKey {
	e := ix.entries[pos]
	return keyOf(sort, last[e.i].Tenant, last[e.i].Group, e.lag, e.status())
}

// listQuery is a list request's parameters.
type listQuery struct {
	limit int
	after *listKey
	q     string // lowercased
	// states are the group states the state filter takes, by code:
	// each state's name as given or lowercased (nil: no filter).
	states   map[groups.GroupState]bool
	types    map[string]bool
	statuses map[Status]bool
	sort     string
}

// parseListQuery reads ?limit, ?cursor, ?q, ?state, ?type, ?status and
// ?sort.
func parseListQuery(r *http.Request) (listQuery, error) {
	v := r.URL.Query()
	lq := listQuery{limit: defaultListLimit, q: strings.ToLower(v.Get("q")), sort: cmp.Or(v.Get("sort"), sortName)}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxListLimit {
			return lq, errors.New("limit must be 1 to " + strconv.Itoa(maxListLimit) + ", not " + strconv.Quote(s))
		}
		lq.limit = n
	}
	if lq.sort != sortName && lq.sort != sortLag && lq.sort != sortStatus {
		return lq, errors.New("sort must be name, lag or status, not " + strconv.Quote(lq.sort))
	}
	if c := v.Get("cursor"); c != "" {
		k, err := decodeCursor(c)
		if err != nil {
			return lq, err
		}
		lq.after = &k
	}
	set := func(name string, allowed ...string) (map[string]bool, error) {
		out := map[string]bool{}
		for _, f := range strings.Split(v.Get(name), ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			if allowed != nil && !slices.Contains(allowed, f) {
				return nil, errors.New(name + " takes " + strings.Join(allowed, ", ") + ", not " + strconv.Quote(f))
			}
			out[f] = true
		}
		if len(out) == 0 {
			return nil, nil
		}
		return out, nil
	}
	var err error
	states, err := set("state")
	if err != nil {
		return lq, err
	}
	if states != nil {
		// Matched here once, not a group at a time: lowering each
		// group's state made a string of it.
		lq.states = map[groups.GroupState]bool{}
		for c := range 256 {
			st := groups.GroupState(c)
			if n := st.String(); n != "" && (states[n] || states[strings.ToLower(n)]) {
				lq.states[st] = true
			}
		}
	}
	if lq.types, err = set("type", "classic", "consumer", "share"); err != nil {
		return lq, err
	}
	st, err := set("status", "OK", "WARN", "STALL", "STOP", "ERR", "UNKNOWN")
	if err != nil {
		return lq, err
	}
	if st != nil {
		lq.statuses = map[Status]bool{}
		for s := range st {
			if s == "UNKNOWN" {
				s = string(StatusUnknown)
			}
			lq.statuses[Status(s)] = true
		}
	}
	return lq, nil
}

func encodeCursor(k listKey) string {
	b, _ := json.Marshal(k)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(c string) (listKey, error) {
	var k listKey
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err != nil {
		return k, errors.New("cursor is not one a list answered with (next_cursor)")
	}
	return k, nil
}

// matches reports whether the group at e, of the last sample's s, is in
// q's filters (not its scope).
func (q listQuery) matches(e listEntry, s *groups.Summary) bool {
	if q.types != nil && !q.types[s.Type.String()] {
		return false
	}
	if q.states != nil && !q.states[s.State] {
		return false
	}
	if q.statuses != nil && !q.statuses[e.status()] {
		return false
	}
	if q.q != "" && !containsLower(s.Group, q.q) {
		return false
	}
	return true
}

// containsLower reports whether name, lowercased, contains q; name is
// lowercased only if it has a letter to lower (most names have none).
func containsLower(name, q string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return strings.Contains(strings.ToLower(name), q)
		}
	}
	return strings.Contains(name, q)
}

// listPage is one node's page: its groups, how many match in all, and
// whether more follow the page.
type listPage struct {
	groups []GroupSummary
	total  int
	more   bool
	totals ListTotals
}

// ListTotals sums every group a list query matches, not only its page's.
type ListTotals struct {
	Members int   `json:"members"`
	Lag     int64 `json:"lag"`
	// NotOK counts the groups whose status is WARN, STALL, STOP or ERR.
	NotOK int `json:"not_ok"`
}

func (t *ListTotals) add(o ListTotals) {
	t.Members += o.Members
	t.Lag += o.Lag
	t.NotOK += o.NotOK
}

// page answers q from the last sample for the scope sc.
//
// It holds a.mu for reading throughout: the sampler writes the entries,
// and the source the summaries, in place (samplePartial).
func (a *API) page(q listQuery, sc scope) listPage {
	a.mu.RLock()
	defer a.mu.RUnlock()
	ix, sums, shares, ends, at := a.index, a.last, a.shares, a.ends, a.lastAt
	if ends == nil {
		ends = endOffsets(a.cfg.Source.Topics())
	}
	if ix.orders == nil { // before the first sample
		ix.orders = &lazyOrders{}
	}
	order := ix.order(q.sort, sums)
	start := 0
	if q.after != nil {
		start = searchAfter(len(ix.entries), func(i int) bool {
			return ix.key(q.sort, order(i), sums).compare(*q.after) > 0
		})
	}
	var p listPage
	var picked []int32
	for i := range ix.entries {
		pos := order(i)
		e := ix.entries[pos]
		s := &sums[e.i]
		if !sc.has(s.Tenant) || !q.matches(e, s) || !a.coordinates(s.Tenant, s.Group) {
			continue
		}
		p.total++
		p.totals.add(ListTotals{Members: int(s.Members), Lag: e.lag, NotOK: notOK(e.status())})
		if i < start {
			continue
		}
		if len(picked) == q.limit {
			p.more = true
			continue
		}
		picked = append(picked, pos)
	}
	p.groups = make([]GroupSummary, 0, len(picked))
	now := at
	if now.IsZero() {
		now = time.Now()
	}
	for _, pos := range picked {
		s := sums[ix.entries[pos].i]
		g := a.summaryLocked(s, shares[groupRef{s.Tenant, s.Group}], ends, now)
		if !at.IsZero() {
			at := at.UTC()
			g.SampledAt = &at
		}
		p.groups = append(p.groups, g)
	}
	return p
}

// notOK is 1 for a status that needs a look (WARN, STALL, STOP, ERR).
func notOK(s Status) int {
	if s.rank() > StatusOK.rank() {
		return 1
	}
	return 0
}

// searchAfter is the first i in [0, n) for which after(i) is true, after
// being false then true along the order.
func searchAfter(n int, after func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if after(m) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// listGroups answers from the lag sampler's last reading, not a new one:
// a reading copies every committed offset out of every shard's loop, and
// a page polling the list every 2 s would do that for each viewer.
func (a *API) listGroups(w http.ResponseWriter, r *http.Request) {
	sc, ok := requestScope(w, r)
	if !ok {
		return
	}
	q, err := parseListQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	p := a.page(q, sc)
	resp := map[string]any{}
	if at := a.sampledAt(); !at.IsZero() {
		resp["sampled_at"] = at.UTC()
	}
	if a.clusterWide(r) {
		var missing []Unanswered
		p, missing = a.clusterGroups(r, q, p)
		if missing == nil {
			missing = []Unanswered{}
		}
		resp["nodes"], resp["unanswered"], resp["partial"] = a.cfg.Cluster.Nodes(), missing, len(missing) > 0
	}
	resp["groups"], resp["total"], resp["totals"] = p.groups, p.total, p.totals
	if p.more && len(p.groups) > 0 {
		g := p.groups[len(p.groups)-1]
		resp["next_cursor"] = encodeCursor(keyOf(q.sort, g.Tenant, g.Group, g.TotalLag, g.Status))
	}
	writeJSON(w, http.StatusOK, resp)
}
