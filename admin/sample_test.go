package admin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/topics"
)

// fakeSource answers Inspect with sums and Topics with ts, as they are
// when asked: a test changes them between samples. Like the
// coordinator's, a reading keeps the summaries of the groups that did
// not change (their Offsets and Assigned the same slices).
type fakeSource struct {
	// mu guards sums and ts for a test that changes them while the API
	// serves (TestSampleWhileServing); others set them directly.
	mu   sync.Mutex
	sums []groups.Summary
	ts   []TopicInfo
}

func (s *fakeSource) Node() NodeInfo { return NodeInfo{} }
func (s *fakeSource) Inspect(context.Context) ([]groups.Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sums, nil
}
func (s *fakeSource) InspectGroup(_ context.Context, tenant, group string) (groups.Summary, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.sums {
		if x.Tenant == tenant && x.Group == group {
			return x, true, nil
		}
	}
	return groups.Summary{}, false, nil
}
func (s *fakeSource) Handle(context.Context, string, kmsg.Request) kmsg.Response { return nil }
func (s *fakeSource) GroupConfigs(string, string) []GroupConfig                  { return nil }
func (s *fakeSource) Topics() []TopicInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ts
}

// inPlaceSource is a fakeSource that answers as the coordinator's
// InspectInPlace does: when a reading has the groups of the last one, in
// order (sorted, no group twice), the summaries that changed are written
// into the last reading's slice, holding the reader's lock, and named.
// A group changed if marked says so, or (deep) if its summary is not
// deeply the last one's.
type inPlaceSource struct {
	*fakeSource
	prev   []groups.Summary
	last   []groups.Summary // the source's slice last read
	marked map[groupRef]bool
	deep   bool
}

func (s *inPlaceSource) InspectInPlace(_ context.Context, mu sync.Locker) (groups.Reading, error) {
	s.fakeSource.mu.Lock()
	cur := s.sums
	s.fakeSource.mu.Unlock()
	// The same slice as last time (a benchmark changing it in place) has
	// its groups in order, and what changed is what is marked.
	sameArray := len(s.prev) == len(cur) && len(cur) > 0 && &s.last[0] == &cur[0]
	inOrder := sameArray || len(s.prev) == len(cur) && len(cur) > 0
	for i := range cur {
		if !inOrder || sameArray {
			break
		}
		inOrder = compareGroups(&s.prev[i], &cur[i]) == 0 && (i == 0 || compareGroups(&cur[i-1], &cur[i]) < 0)
	}
	s.last = cur
	if !inOrder {
		s.prev = slices.Clone(cur)
		return groups.Reading{Groups: s.prev}, nil
	}
	var changed []int32
	if s.deep {
		for i := range cur {
			if s.marked[groupRef{cur[i].Tenant, cur[i].Group}] || !reflect.DeepEqual(s.prev[i], cur[i]) {
				changed = append(changed, int32(i))
			}
		}
	} else {
		for ref := range s.marked {
			if i, ok := slices.BinarySearchFunc(cur, ref, func(x groups.Summary, r groupRef) int {
				return compareRefs(groupRef{x.Tenant, x.Group}, r)
			}); ok {
				changed = append(changed, int32(i))
			}
		}
		slices.Sort(changed)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, i := range changed {
		s.prev[i] = cur[i]
	}
	return groups.Reading{Groups: s.prev, InPlace: true, Changed: changed}, nil
}

// quietSource is n groups of the default organisation, each committed on
// 4 partitions of one of 100 topics, nothing changing.
func quietSource(n int) *fakeSource {
	const nTopics, nParts = 100, 4
	src := &fakeSource{}
	for t := range nTopics {
		ti := TopicInfo{Name: topics.Internal("", fmt.Sprintf("topic-%03d", t))}
		for p := range nParts {
			ti.Partitions = append(ti.Partitions, PartitionInfo{Partition: int32(p), LogEndOffset: 1000})
		}
		src.ts = append(src.ts, ti)
	}
	for g := range n {
		s := groups.Summary{Group: fmt.Sprintf("group-%07d", g), ID: fmt.Sprint("cgp_", g), Type: groups.ClassicGroup, ProtocolType: "consumer", State: groups.StateEmpty}
		topic := fmt.Sprintf("topic-%03d", g%nTopics)
		var offs []groups.OffsetSummary
		for p := range nParts {
			offs = append(offs, groups.OffsetSummary{Topic: topic, Partition: int32(p), Offset: 900 + int64(g%200), CommitTimestamp: 1_700_000_000_000})
		}
		s.Offsets = groups.MakeOffsets(offs)
		src.sums = append(src.sums, s)
	}
	return src
}

// BenchmarkSampleQuiet: one lag sample of 100,000 quiet groups of 4
// partitions each, once the window is full: reading every group in full
// (full), and as the sampler does, repeating the groups that did not
// change (quiet).
//
// quiet-new-slice is the coordinator's reading as it was before readings
// were written in place, a new slice each time (all its groups the same
// summaries): the sampler walks every group, repeating each.
// hundred-changed reads 100 groups changed in place at each reading,
// each committing again on one partition.
func BenchmarkSampleQuiet(b *testing.B) {
	for _, name := range []string{"full", "quiet-new-slice", "quiet", "hundred-changed"} {
		b.Run(name, func(b *testing.B) {
			base := quietSource(100_000)
			var src APISource = base
			switch name {
			case "quiet-new-slice":
				src = newSliceSource{base}
			case "quiet", "hundred-changed":
				src = &inPlaceSource{fakeSource: base, marked: map[groupRef]bool{}}
			}
			api := NewAPI(APIConfig{Source: src})
			api.slowOnly = name == "full"
			for range 12 {
				api.Sample(context.Background())
			}
			rnd := rand.New(rand.NewSource(1))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if name == "hundred-changed" {
					b.StopTimer()
					ip := src.(*inPlaceSource)
					clear(ip.marked)
					for range 100 {
						i := rnd.Intn(len(base.sums))
						g := &base.sums[i]
						offs := slices.Collect(g.Offsets.All())
						offs[0].Offset++
						offs[0].CommitTimestamp += 1000
						g.Offsets = groups.MakeOffsets(offs)
						ip.marked[groupRef{g.Tenant, g.Group}] = true
					}
					b.StartTimer()
				}
				api.Sample(context.Background())
			}
		})
	}
}

// newSliceSource hands each reading as a new slice.
type newSliceSource struct{ *fakeSource }

func (s newSliceSource) Inspect(context.Context) ([]groups.Summary, error) {
	return slices.Clone(s.sums), nil
}

// estate is a changing set of groups for TestSampleQuietSame: each step
// changes some of them, as the coordinator's readings do (a changed group
// gets a new summary; the others keep theirs, slices and all).
type estate struct {
	rnd    *rand.Rand
	src    *fakeSource
	groups map[groupRef]groups.Summary
	ends   map[TopicPartition]int64 // by the log's names; absent: not known here
	shares map[groupRef][]sharestate.Description
	ids    map[string][16]byte // topic ids, by the log's names
	next   int
	// changed are the groups the last step changed (or touched), as a
	// coordinator's shards name them.
	changed map[groupRef]bool
}

var (
	estateTenants = []string{"", "acme"}
	estateTopics  = []string{"t0", "t1", "t2"}
)

const estateParts = 3

func newEstate(seed int64) *estate {
	e := &estate{rnd: rand.New(rand.NewSource(seed)), src: &fakeSource{}, groups: map[groupRef]groups.Summary{},
		ends: map[TopicPartition]int64{}, shares: map[groupRef][]sharestate.Description{}, ids: map[string][16]byte{}, changed: map[groupRef]bool{}}
	for _, tenant := range estateTenants {
		for k, topic := range estateTopics {
			name := topics.Internal(tenant, topic)
			e.ids[name] = [16]byte{byte(len(tenant)), byte(k + 1)}
			for p := range estateParts {
				e.ends[TopicPartition{Topic: name, Partition: int32(p)}] = 100
			}
		}
	}
	for range 30 {
		e.add()
	}
	e.publish()
	return e
}

func (e *estate) offsets() groups.Offsets {
	var out []groups.OffsetSummary
	for _, topic := range estateTopics {
		for p := range estateParts {
			if e.rnd.Intn(3) == 0 {
				off := int64(80 + e.rnd.Intn(30))
				if e.rnd.Intn(10) == 0 {
					off = -1
				}
				out = append(out, groups.OffsetSummary{Topic: topic, Partition: int32(p), Offset: off, CommitTimestamp: 1_700_000_000_000 + int64(e.rnd.Intn(1000))})
			}
		}
	}
	if e.rnd.Intn(5) == 0 {
		out = append(out, groups.OffsetSummary{Topic: "gone", Partition: 0, Offset: 5, CommitTimestamp: 1_700_000_000_000})
		slices.SortFunc(out, func(a, b groups.OffsetSummary) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
	}
	return groups.MakeOffsets(out)
}

func (e *estate) assigned() []groups.AssignedPartition {
	var out []groups.AssignedPartition
	for p := range estateParts {
		if e.rnd.Intn(3) == 0 {
			out = append(out, groups.AssignedPartition{Topic: estateTopics[e.rnd.Intn(len(estateTopics))], Partition: int32(p)})
		}
	}
	return out
}

func (e *estate) shareState(ref groupRef) []sharestate.Description {
	var out []sharestate.Description
	for _, topic := range estateTopics[:2] {
		for p := range 2 {
			start := int64(70 + e.rnd.Intn(30))
			d := sharestate.Description{Key: sharestate.Key{Tenant: ref.Tenant, Group: ref.Group, TopicID: e.ids[topics.Internal(ref.Tenant, topic)], Partition: int32(p)},
				StartOffset: start, EndOffset: start + 4,
				Runs: []sharestate.Run{{First: start, Last: start + 1, State: record.ShareAcknowledged}, {First: start + 2, Last: start + 3, State: record.ShareAcquired, DeliveryCount: 2}}}
			out = append(out, d)
		}
	}
	return out
}

func (e *estate) add() {
	e.next++
	ref := groupRef{estateTenants[e.rnd.Intn(len(estateTenants))], fmt.Sprintf("G%03d-%c", e.next, 'a'+rune(e.rnd.Intn(26)))}
	s := groups.Summary{Tenant: ref.Tenant, Group: ref.Group, ID: fmt.Sprint("cgp_", e.next), State: groups.StateStable, Members: 1 + e.rnd.Int31n(3)}
	switch e.rnd.Intn(4) {
	case 0:
		s.Type = groups.ShareGroup
		e.shares[ref] = e.shareState(ref)
	case 1:
		s.Type, s.Offsets, s.Assigned = groups.ConsumerGroup, e.offsets(), e.assigned()
	default:
		s.Type, s.ProtocolType, s.Offsets, s.Assigned = groups.ClassicGroup, "consumer", e.offsets(), e.assigned()
	}
	e.groups[ref] = s
}

// step changes the estate: each group may change in one way, with odds
// low enough that most stay quiet for a window or longer.
//
// A step in four changes no group (unchanged reports it): the
// coordinator then hands the last reading back, the same slice; only
// some logs may grow.
func (e *estate) step() (unchanged bool) {
	clear(e.changed)
	if e.rnd.Intn(4) == 0 {
		e.grow()
		e.publishTopics()
		return true
	}
	for _, ref := range slices.SortedFunc(maps.Keys(e.groups), compareRefs) {
		s := e.groups[ref]
		if e.rnd.Intn(12) != 0 {
			continue
		}
		switch e.rnd.Intn(9) {
		case 0:
			delete(e.groups, ref)
			delete(e.shares, ref)
			continue
		case 1, 2: // a commit: progress, the same offset again, or back
			if s.Offsets.Len() == 0 {
				break
			}
			offs := slices.Collect(s.Offsets.All())
			o := &offs[e.rnd.Intn(len(offs))]
			o.Offset += int64(e.rnd.Intn(8) - 2)
			o.CommitTimestamp += int64(1 + e.rnd.Intn(5000))
			s.Offsets = groups.MakeOffsets(offs)
		case 3: // members and generation, the offsets as they were
			s.Members, s.Generation, s.State = e.rnd.Int31n(4), s.Generation+1, []groups.GroupState{groups.StateStable, groups.StateEmpty, groups.StatePreparingRebalance}[e.rnd.Intn(3)]
			s.PendingMembers = e.rnd.Int31n(2)
		case 4:
			s.Assigned = e.assigned()
		case 5: // offsets deleted or added
			s.Offsets = e.offsets()
		case 6:
			if s.Type == groups.ShareGroup {
				e.shares[ref] = e.shareState(ref)
			}
		case 7: // the same summary again, as a new value with new slices
			s.Offsets, s.Assigned = groups.MakeOffsets(slices.Collect(s.Offsets.All())), slices.Clone(s.Assigned)
		case 8: // another type under the same name
			s.Type = []groups.GroupType{groups.ClassicGroup, groups.ConsumerGroup, groups.ShareGroup}[e.rnd.Intn(3)]
			if s.Type == groups.ShareGroup {
				s.Offsets, s.Assigned = groups.Offsets{}, nil
				e.shares[ref] = e.shareState(ref)
			} else {
				delete(e.shares, ref)
			}
		}
		e.groups[ref] = s
		e.changed[ref] = true
	}
	for range e.rnd.Intn(3) {
		e.add()
	}
	e.grow()
	e.publish()
	return false
}

// grow makes some partitions' logs grow; now and then one is not known
// here for a while.
func (e *estate) grow() {
	for _, tp := range slices.SortedFunc(maps.Keys(e.ends), compareTPs) {
		switch e.rnd.Intn(20) {
		case 0, 1:
			e.ends[tp] += int64(1 + e.rnd.Intn(5))
		case 2:
			if e.ends[tp] >= 0 {
				e.ends[tp] = -1 - e.ends[tp]
			} else {
				e.ends[tp] = -1 - e.ends[tp]
			}
		}
	}
}

// publish makes the estate the source's reading: sorted, but now and
// then shuffled, or with a group twice, which the coordinator never
// answers and the sampler must survive.
func (e *estate) publish() {
	sums := make([]groups.Summary, 0, len(e.groups))
	for _, ref := range slices.SortedFunc(maps.Keys(e.groups), compareRefs) {
		sums = append(sums, e.groups[ref])
	}
	switch e.rnd.Intn(25) {
	case 0:
		e.rnd.Shuffle(len(sums), func(i, j int) { sums[i], sums[j] = sums[j], sums[i] })
	case 1:
		if len(sums) > 0 {
			k := e.rnd.Intn(len(sums))
			sums = slices.Insert(sums, k, sums[k])
		}
	}
	e.src.sums = sums
	e.publishTopics()
}

// publishTopics makes the estate's logs the source's topics.
func (e *estate) publishTopics() {
	e.src.ts = nil
	for _, tenant := range estateTenants {
		for _, topic := range estateTopics {
			name := topics.Internal(tenant, topic)
			ti := TopicInfo{Name: name, ID: e.ids[name]}
			for p := range estateParts {
				end := e.ends[TopicPartition{Topic: name, Partition: int32(p)}]
				start := int64(0)
				if end < 0 {
					end, start = -1, -1
				}
				ti.Partitions = append(ti.Partitions, PartitionInfo{Partition: int32(p), LogStartOffset: start, LogEndOffset: end})
			}
			e.src.ts = append(e.src.ts, ti)
		}
	}
}

// Handle answers a group's describe with no members.
func (e *estate) handle(_ context.Context, _ string, req kmsg.Request) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.DescribeGroupsRequest:
		resp := kmsg.NewPtrDescribeGroupsResponse()
		resp.Groups = []kmsg.DescribeGroupsResponseGroup{{Group: r.Groups[0], ProtocolType: "consumer"}}
		return resp
	case *kmsg.ConsumerGroupDescribeRequest:
		resp := kmsg.NewPtrConsumerGroupDescribeResponse()
		resp.Groups = []kmsg.ConsumerGroupDescribeResponseGroup{{Group: r.Groups[0]}}
		return resp
	case *kmsg.ShareGroupDescribeRequest:
		resp := kmsg.NewPtrShareGroupDescribeResponse()
		resp.Groups = []kmsg.ShareGroupDescribeResponseGroup{{GroupID: r.GroupIDs[0]}}
		return resp
	}
	return nil
}

// estateSource is the estate as an InPlaceSource (Handle answering).
type estateSource struct {
	*inPlaceSource
	e *estate
}

func (s estateSource) Handle(ctx context.Context, tenant string, req kmsg.Request) kmsg.Response {
	return s.e.handle(ctx, tenant, req)
}

// newSliceEstate is the estate as an APISource whose every reading is a
// new slice.
type newSliceEstate struct {
	newSliceSource
	e *estate
}

func (s newSliceEstate) Handle(ctx context.Context, tenant string, req kmsg.Request) kmsg.Response {
	return s.e.handle(ctx, tenant, req)
}

// apiLag is an API as the lag collector's source.
type apiLag struct {
	api *API
	src *fakeSource
}

func (l apiLag) Groups(maxSeries int) ([]GroupOffsets, int) { return l.api.Groups(maxSeries) }
func (l apiLag) Partitions() map[TopicPartition]PartitionOffsets {
	return endOffsets(l.src.Topics())
}
func (l apiLag) Remote() map[TopicPartition]PartitionOffsets { return nil }

// TestSampleQuietSame: the sampler's paths for the groups that did not
// change since the last sample give what reading every group in full
// gives: two APIs, one reading every group in full, sample the same
// random readings at the same times, and everything they show is the
// same after each (the tracker byte for byte, but for the number of a
// group's last reading, which a partial reading leaves; the list's
// entries, every order's pages, each group's detail, /metrics). The
// readings are written in place where the coordinator would (the
// partial reading, samplePartial), or (newSlices) each a new slice (the
// full reading that repeats quiet groups).
func TestSampleQuietSame(t *testing.T) {
	for _, tc := range []struct {
		cfg       LagTrackerConfig
		series    int
		seed      int64
		newSlices bool
	}{
		{LagTrackerConfig{Window: 3, History: 5}, 0, 1, false},
		{LagTrackerConfig{Window: 4, History: 4}, 40, 2, false},
		{LagTrackerConfig{Window: 2, History: 7}, 0, 3, false},
		{LagTrackerConfig{}, 25, 4, false},
		{LagTrackerConfig{Window: 3, History: 5}, 0, 5, true},
		{LagTrackerConfig{Window: 2, History: 7}, 30, 6, true},
	} {
		t.Run(fmt.Sprint(tc.cfg, tc.seed, tc.newSlices), func(t *testing.T) {
			e := newEstate(tc.seed)
			now := time.Unix(1_700_000_100, 0)
			clock := func() time.Time { return now }
			newAPI := func(slow bool) (*API, http.Handler, *prometheus.Registry) {
				var src APISource = estateSource{&inPlaceSource{fakeSource: e.src, marked: e.changed, deep: true}, e}
				if tc.newSlices {
					src = newSliceEstate{newSliceSource{e.src}, e}
				}
				api := NewAPI(APIConfig{Source: src, Tracker: tc.cfg, MaxGroupSeries: tc.series,
					ShareState: func(_ context.Context, tenant, group string) []sharestate.Description {
						return e.shares[groupRef{tenant, group}]
					}})
				api.slowOnly, api.clock = slow, clock
				reg := prometheus.NewRegistry()
				reg.MustRegister(api, NewLag(LagConfig{Source: apiLag{api, e.src}, MaxGroupSeries: tc.series}))
				return api, api.Handler(), reg
			}
			fast, fastH, fastReg := newAPI(false)
			slow, slowH, slowReg := newAPI(true)
			steps := 100
			switch {
			case tc.cfg.History == 0:
				steps = 75 // past the default history of 60
			case raceOn:
				steps = 40 // well past a history of 7, in a third of the time
			}
			quiet, handedBack, partial := 0, 0, 0
			for step := range steps {
				unchanged, wasSorted := false, fast.lastSorted
				if step > 0 {
					unchanged = e.step()
					now = now.Add(time.Duration(1+e.rnd.Intn(9)) * time.Second)
				}
				fast.Sample(context.Background())
				slow.Sample(context.Background())
				quiet += countQuiet(fast)
				if fast.lastPartial {
					partial++
				}
				if slow.lastPartial {
					t.Fatal("the API reading in full read in part")
				}
				where := fmt.Sprintf("step %d", step)
				sameAPIs(t, where, fast, slow)
				// The list by name is in order, whether the reading
				// came sorted, shuffled, or handed back as it was.
				for _, api := range []*API{fast, slow} {
					es := api.index.entries
					for k := 1; k < len(es); k++ {
						if compareGroups(&api.last[es[k-1].i], &api.last[es[k].i]) > 0 {
							t.Fatalf("%s: the list by name is out of order at %d", where, k)
						}
					}
				}
				// A reading of no changed group, in order, is sampled
				// through the last one: most of its groups quietly (all
				// but share groups and those whose logs grew), and, in
				// place, in part.
				if unchanged && wasSorted && len(e.src.sums) > 0 {
					handedBack++
					if countQuiet(fast) == 0 {
						t.Fatalf("%s: a reading of no changed group, and no group sampled quietly", where)
					}
					if !tc.newSlices && !fast.lastPartial {
						t.Fatalf("%s: a reading in place of no changed group, read in full", where)
					}
				}
				// The tracker forgets the groups gone, and only those.
				for _, x := range e.src.sums {
					if _, ok := fast.tracker.groupMap()[groupRef{x.Tenant, x.Group}]; !ok {
						t.Fatalf("%s: %s/%s not tracked", where, x.Tenant, x.Group)
					}
				}
				if n := len(slices.CompactFunc(slices.SortedFunc(slices.Values(e.src.sums), func(a, b groups.Summary) int {
					return compareGroups(&a, &b)
				}), func(a, b groups.Summary) bool { return compareGroups(&a, &b) == 0 })); n != len(fast.tracker.groups) {
					t.Fatalf("%s: %d groups tracked, %d read", where, len(fast.tracker.groups), n)
				}
				// The whole views every third sample; under the race
				// detector, which makes them about ten times slower (and
				// sees no goroutines here), every ninth.
				if every := map[bool]int{false: 3, true: 9}[raceOn]; step%every != 0 {
					// What the views show is read from what sameAPIs
					// compared; reading them all every step is slow.
					continue
				}
				for _, sort := range []string{"name", "lag", "status"} {
					for _, q := range []string{"", "&org=acme&status=STOP,OK"} {
						q := "sort=" + sort + q
						if f, s := pages(t, fastH, q), pages(t, slowH, q); f != s {
							t.Fatalf("%s: ?%s:\nfast %s\nslow %s", where, q, f, s)
						}
					}
				}
				for _, x := range e.src.sums {
					path := "/api/v1/groups/" + url.PathEscape(x.Group) + "?tenant=" + url.QueryEscape(x.Tenant)
					if f, s := get(t, fastH, path), get(t, slowH, path); f != s {
						t.Fatalf("%s: %s:\nfast %s\nslow %s", where, path, f, s)
					}
				}
				if f, s := scrape(t, fastReg), scrape(t, slowReg); f != s {
					fl, sl := strings.Split(f, "\n"), strings.Split(s, "\n")
					for k := range min(len(fl), len(sl)) {
						if fl[k] != sl[k] {
							t.Fatalf("%s: /metrics, line %d:\nfast %.3000s\nslow %.3000s", where, k, fl[k], sl[k])
						}
					}
					t.Fatalf("%s: /metrics: %d lines fast, %d slow", where, len(fl), len(sl))
				}
			}
			if quiet == 0 {
				t.Fatal("no group took the quiet path")
			}
			if handedBack == 0 {
				t.Fatal("no reading changed no group")
			}
			if !tc.newSlices && partial == 0 {
				t.Fatal("no reading was read in part")
			}
			t.Logf("%d steps, %d quiet group samples, %d readings of no change, %d read in part", steps, quiet, handedBack, partial)
		})
	}
}

// countQuiet counts the groups the last sample repeated: those whose
// list entry it did not build (not a test of anything but the test).
func countQuiet(a *API) int { return a.quietCount }

// sameAPIs compares what the sample left in fast and slow.
func sameAPIs(t *testing.T, where string, fast, slow *API) {
	t.Helper()
	ft, st := fast.tracker, slow.tracker
	if ft.seq != st.seq || !slices.Equal(ft.times, st.times) || !slices.Equal(ft.topics, st.topics) {
		t.Fatalf("%s: tracker readings or topics differ", where)
	}
	if !maps.EqualFunc(ft.groupMap(), st.groupMap(), func(a, b groupLag) bool { return bytes.Equal(a, b) }) {
		for ref, g := range st.groupMap() {
			if !bytes.Equal(ft.groupMap()[ref], g) {
				f, _ := ft.Group(ref.Tenant, ref.Group, fast.lastAt)
				s, _ := st.Group(ref.Tenant, ref.Group, slow.lastAt)
				t.Errorf("%s: %v:\nfast %x %+v\nslow %x %+v", where, ref, []byte(ft.groupMap()[ref]), f, []byte(g), s)
			}
		}
		t.Fatalf("%s: %d groups tracked fast, %d slow", where, len(ft.groups), len(st.groups))
	}
	for ref := range st.groupMap() {
		f, _ := ft.Group(ref.Tenant, ref.Group, fast.lastAt)
		s, _ := st.Group(ref.Tenant, ref.Group, slow.lastAt)
		if !reflect.DeepEqual(f, s) {
			t.Fatalf("%s: %v: Group\nfast %+v\nslow %+v", where, ref, f, s)
		}
		fs, _ := ft.GroupStatus(ref.Tenant, ref.Group, fast.lastAt)
		ss, _ := st.GroupStatus(ref.Tenant, ref.Group, slow.lastAt)
		if fs != ss {
			t.Fatalf("%s: %v: GroupStatus fast %q, slow %q", where, ref, fs, ss)
		}
	}
	if !reflect.DeepEqual(fast.index.entries, slow.index.entries) {
		t.Fatalf("%s: list entries\nfast %+v\nslow %+v", where, fast.index.entries, slow.index.entries)
	}
	if !reflect.DeepEqual(fast.progress, slow.progress) || !reflect.DeepEqual(fast.shares, slow.shares) || !reflect.DeepEqual(fast.ends, slow.ends) {
		t.Fatalf("%s: share progress, shares or ends differ", where)
	}
	for _, max := range []int{5, 1000} {
		fg, fd := fast.Groups(max)
		sg, sd := slow.Groups(max)
		if fd != sd || !reflect.DeepEqual(fg, sg) {
			t.Fatalf("%s: Groups(%d) differ", where, max)
		}
	}
}

// pages is every page of the list with query q, pages of 20.
func pages(t *testing.T, h http.Handler, q string) string {
	t.Helper()
	var out strings.Builder
	cursor := ""
	for range 1000 {
		path := "/api/v1/groups?limit=20&" + q
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		body := get(t, h, path)
		out.WriteString(body)
		var p struct {
			NextCursor string `json:"next_cursor"`
		}
		code, js, _ := strings.Cut(body, " ")
		if err := json.Unmarshal([]byte(js), &p); code != "200" || err != nil {
			t.Fatal(path, body, err)
		}
		if cursor = p.NextCursor; cursor == "" {
			return out.String()
		}
	}
	t.Fatal("the cursor never ends")
	return ""
}

func get(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return fmt.Sprint(rec.Code, " ", rec.Body.String())
}

// scrape is the registry's families, but for how long the sample took.
func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	// A reading with a group twice (which the coordinator never
	// answers) has its series twice: the error is compared too.
	// (its lines in no order: collectors run at once).
	mfs, err := reg.Gather()
	var out strings.Builder
	if err != nil {
		lines := strings.Split(err.Error(), "\n")
		slices.Sort(lines)
		out.WriteString(strings.Join(lines, "\n") + "\n")
	}
	for _, mf := range mfs {
		if mf.GetName() != "cohort_lag_sample_seconds" {
			out.WriteString(mf.String() + "\n")
		}
	}
	return out.String()
}

// TestSamplePartialReadsWhatChanged: a reading written in place reads
// the groups that changed, those with an offset on a partition whose end
// moved, and those still settling, and no other: on 2,000 quiet groups
// none, once their windows are full; one, then 21 once a topic it was
// given meanwhile moves. What it shows is what reading in full shows.
func TestSamplePartialReadsWhatChanged(t *testing.T) {
	base := quietSource(2000)
	now := time.Unix(1_700_000_100, 0)
	newAPI := func(slow bool) *API {
		api := NewAPI(APIConfig{Source: &inPlaceSource{fakeSource: base, marked: map[groupRef]bool{}}, Tracker: LagTrackerConfig{Window: 3, History: 5}})
		api.slowOnly, api.clock = slow, func() time.Time { return now }
		return api
	}
	fast, slow := newAPI(false), newAPI(true)
	marked := fast.cfg.Source.(*inPlaceSource).marked
	slowMarked := slow.cfg.Source.(*inPlaceSource).marked
	sample := func(where string) int {
		t.Helper()
		now = now.Add(5 * time.Second)
		fast.Sample(context.Background())
		slow.Sample(context.Background())
		clear(marked)
		clear(slowMarked)
		sameAPIs(t, where, fast, slow)
		if !fast.lastPartial {
			return -1
		}
		return fast.partialRead
	}
	// A group settles once its window is its last run's and its history
	// has no older run: History readings after it last changed.
	window, keep := fast.tracker.cfg.Window, fast.tracker.cfg.History
	for r := range keep + 3 {
		if r == 1 {
			// topic-000's partition 1 grows: the partial reading finds
			// its groups by topic (byTopic, made now).
			base.ts[0].Partitions[1].LogEndOffset += 3
		}
		n := sample(fmt.Sprint("reading ", r))
		switch {
		case r == 0 && n != -1:
			t.Fatalf("the first reading read %d groups in part", n)
		case r > 1 && r < window && n != len(base.sums):
			// Every group settles through its first window.
			t.Fatalf("reading %d read %d groups, want all %d settling", r, n, len(base.sums))
		case r == keep+2 && n != 0:
			t.Fatalf("reading %d of settled groups read %d of them", r, n)
		}
	}
	if fast.byTopic == nil {
		t.Fatal("no index by topic after a log grew")
	}
	// Group 5 commits on topic-099 too, which it had no offset on.
	g := &base.sums[5]
	offs := append(slices.Collect(g.Offsets.All()), groups.OffsetSummary{Topic: "topic-099", Partition: 0, Offset: 950, CommitTimestamp: 1_700_000_050_000})
	g.Offsets = groups.MakeOffsets(offs)
	marked[groupRef{g.Tenant, g.Group}], slowMarked[groupRef{g.Tenant, g.Group}] = true, true
	for r := range keep + 2 {
		n := sample(fmt.Sprint("after the commit, reading ", r))
		if n > 1 || r == 0 && n != 1 || r == keep+1 && n != 0 {
			t.Fatalf("after the commit, reading %d read %d groups", r, n)
		}
	}
	// topic-099's partition 0 grows: its 20 groups and group 5 are read.
	base.ts[99].Partitions[0].LogEndOffset += 7
	if n := sample("after topic-099 grew"); n != 21 {
		t.Fatalf("after topic-099 grew, %d groups read, want 21", n)
	}
	if e := fast.index.entries[5]; e.lag != 4*(1000-905)+(1007-950) {
		t.Fatalf("group 5's lag %d after topic-099 grew", e.lag)
	}
}

// TestSampleWhileServing: the list, a group's detail and a scrape read
// while readings are written in place and sampled (for the race
// detector: every view reads the reading and the index under a.mu).
func TestSampleWhileServing(t *testing.T) {
	base := quietSource(500)
	src := &inPlaceSource{fakeSource: base, marked: map[groupRef]bool{}}
	api := NewAPI(APIConfig{Source: estateSource{src, &estate{}}, Tracker: LagTrackerConfig{Window: 3, History: 5}})
	h := api.Handler()
	reg := prometheus.NewRegistry()
	reg.MustRegister(api, NewLag(LagConfig{Source: apiLag{api, base}}))
	api.Sample(context.Background())
	// The source's groups change only between samples (the coordinator
	// writes them during Inspect, under the lock): the sampler makes the
	// changes itself.
	rnd := rand.New(rand.NewSource(7))
	changes := make([][]groups.Summary, 30)
	for k := range changes {
		for range 20 {
			i := rnd.Intn(len(base.sums))
			g := base.sums[i]
			offs := slices.Collect(g.Offsets.All())
			offs[rnd.Intn(len(offs))].Offset++
			g.Offsets = groups.MakeOffsets(offs)
			changes[k] = append(changes[k], g)
		}
	}
	ends := make([]int64, len(changes))
	for k := range ends {
		ends[k] = 1000 + int64(k)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k, ch := range changes {
			clear(src.marked)
			base.mu.Lock()
			cur := slices.Clone(base.sums)
			base.mu.Unlock()
			for _, g := range ch {
				i, _ := slices.BinarySearchFunc(cur, g, func(a, b groups.Summary) int { return compareGroups(&a, &b) })
				cur[i] = g
				src.marked[groupRef{g.Tenant, g.Group}] = true
			}
			base.mu.Lock()
			base.sums = cur
			if k%3 == 0 {
				ts := slices.Clone(base.ts)
				ts[k%len(ts)].Partitions = slices.Clone(ts[k%len(ts)].Partitions)
				ts[k%len(ts)].Partitions[0].LogEndOffset = ends[k]
				base.ts = ts
			}
			base.mu.Unlock()
			api.Sample(context.Background())
		}
	}()
	reads := 0
	for {
		select {
		case <-done:
			if reads == 0 {
				t.Fatal("nothing read while sampling")
			}
			if !api.lastPartial {
				t.Fatal("the last reading was read in full")
			}
			return
		default:
		}
		for _, path := range []string{"/api/v1/groups?limit=50&sort=lag", "/api/v1/groups?limit=50&sort=status&status=STOP", "/api/v1/groups/group-0000007"} {
			if got := get(t, h, path); !strings.HasPrefix(got, "200 ") {
				t.Fatalf("%s: %.200s", path, got)
			}
		}
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
		reads++
	}
}
