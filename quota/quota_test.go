package quota

import (
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/globaltest"
	"github.com/cohort-dev/cohort/store/memstore"
)

func TestRateThrottle(t *testing.T) {
	w := Window{Size: time.Second, Samples: 11}
	r := NewRate(w)
	t0 := time.Unix(1000, 0)
	// 10 units at the start of an empty window: measured over 10 s, 1/s,
	// exactly the quota.
	if d := r.Record(t0, 10, 1); d != 0 {
		t.Fatalf("at quota: throttle %v", d)
	}
	// 10 more: 2/s against 1/s: (2-1)/1 × 10 s, capped at the window.
	if d := r.Record(t0.Add(time.Millisecond), 10, 1); d != 10*time.Second {
		t.Fatalf("twice the quota: throttle %v, want 10s", d)
	}
	if d := r.Record(t0.Add(2*time.Millisecond), 1000, 1); d != w.Max() {
		t.Fatalf("far over: throttle %v, want the cap %v", d, w.Max())
	}
	// Once the window has passed, the samples are forgotten.
	if d := r.Record(t0.Add(w.Max()+time.Second), 1, 1); d != 0 {
		t.Fatalf("after the window: throttle %v", d)
	}
	// No quota: nothing throttled.
	if d := r.Record(t0.Add(w.Max()+time.Second), 1e9, 0); d != 0 {
		t.Fatalf("no quota: throttle %v", d)
	}
}

func TestRegistryResolvesEachKey(t *testing.T) {
	st := memstore.New(memstore.Options{})
	r, err := NewRegistry(globaltest.Start(t, st))
	if err != nil {
		t.Fatal(err)
	}
	if (r.Limits("acme") != Limits{}) {
		t.Fatal("limits with no quotas")
	}
	err = r.Alter(map[Entity][]Op{
		{Default: true}:  {{Key: ProducerByteRate, Value: 100}, {Key: MaxGroups, Value: 5}},
		{Name: "acme"}:   {{Key: MaxGroups, Value: 2}},
		{Name: "globex"}: {{Key: RequestRate, Value: 7}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Limits("acme"), (Limits{ProducerByteRate: 100, MaxGroups: 2}); got != want {
		t.Fatalf("acme: %+v, want %+v", got, want)
	}
	if got, want := r.Limits("other"), (Limits{ProducerByteRate: 100, MaxGroups: 5}); got != want {
		t.Fatalf("other: %+v, want %+v", got, want)
	}
	// A removal, seen by a registry of a unit that loads the store
	// again (a restart).
	if err := r.Alter(map[Entity][]Op{{Name: "acme"}: {{Key: MaxGroups, Remove: true}}}); err != nil {
		t.Fatal(err)
	}
	r2, _ := NewRegistry(globaltest.Start(t, st))
	if got := r2.Limits("acme").MaxGroups; got != 5 {
		t.Fatalf("acme after removal: max groups %d, want the default's 5", got)
	}
	if es := r2.Entries(); len(es) != 2 || !es[0].Entity.Default || es[1].Entity.Name != "globex" {
		t.Fatalf("entries: %+v", es)
	}
}

func TestValidateValue(t *testing.T) {
	for _, c := range []struct {
		key  string
		v    float64
		want string
	}{
		{ProducerByteRate, 1024, ""},
		{RequestPercentage, 12.5, ""},
		{"bogus", 1, "Invalid configuration key bogus"},
		{MaxGroups, 0, "Quota max_groups must be greater than 0"},
		{ConsumerByteRate, -1, "Quota consumer_byte_rate must be greater than 0"},
		{MaxMembersPerGroup, 1.5, "Proposed value for max_members_per_group is not a whole number: 1.5"},
	} {
		if got := ValidateValue(c.key, c.v); got != c.want {
			t.Errorf("%s=%v: %q, want %q", c.key, c.v, got, c.want)
		}
	}
}
