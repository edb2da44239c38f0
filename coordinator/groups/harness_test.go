package groups_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives a groups.Shard as the coordinator runtime does, in
// fake time and without a store: records go to an in-memory map (every
// record is durable at once), timers to a table fired by advance, and
// replies to a table the test reads. After every step it checks the one
// record rule: a shard rebuilt from the records holds the same durable
// state, and classic groups at rest match their records (guard). It also
// checks the group events every output reports (events_test.go) and keeps
// them in events.
type harness struct {
	t   testing.TB
	cfg groups.Config
	m   *groups.Shard
	now time.Time
	// guardEvery runs the guard after every n-th step (1: every step, the
	// default; property tests with thousands of steps thin it out, and
	// always run it at their end).
	guardEvery, steps int

	nextID  machine.RequestID
	records map[string][]byte
	timers  map[string]time.Time
	replies map[machine.RequestID]kmsg.Response
	// order lists replies in the order they were produced.
	order []machine.RequestID
	// written counts records produced (puts and tombstones).
	written int
	// events are the group events reported so far, in order; ev checks
	// them.
	events []observe.GroupEvent
	ev     evCheck
	// catalog is the broker's topics, sent with every request.
	catalog *machine.Catalog
	// groupConfig is the groups' dynamic configs, sent with every
	// request.
	groupConfig machine.GroupConfig
	// reading is what the lag sampler's readings of changes add up to
	// (guard): it must be what a full reading gives.
	reading map[groups.GroupRef]groups.Summary
}

// propGuardEvery thins the guard out in the property tests, which take
// thousands of steps: after every 16th machine event, and at the end of
// every schedule.
const propGuardEvery = 16

// testConfig is Kafka's defaults, shard 0.
func testConfig() groups.Config {
	return groups.Config{
		MinSessionTimeout:      6 * time.Second,
		MaxSessionTimeout:      30 * time.Minute,
		MaxSize:                1<<31 - 1,
		InitialDelay:           3 * time.Second,
		InitialQuiet:           3 * time.Second,
		OffsetMetadataMaxBytes: 4096,
		Retention:              7 * 24 * time.Hour,
		RetentionCheck:         10 * time.Minute,

		ConsumerSessionTimeout:    45 * time.Second,
		ConsumerHeartbeatInterval: 5 * time.Second,
		AssignmentInterval:        time.Second,
		Assignors:                 []assign.Assignor{assign.Uniform{}, assign.Range{}},
	}
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newHarness(t testing.TB, cfg groups.Config) *harness {
	h := &harness{
		t:          t,
		cfg:        cfg,
		now:        epoch,
		records:    map[string][]byte{},
		timers:     map[string]time.Time{},
		replies:    map[machine.RequestID]kmsg.Response{},
		guardEvery: 1,
	}
	h.m = groups.New(cfg)
	h.apply(h.m.Loaded(h.now))
	return h
}

func (h *harness) apply(out machine.Output) {
	h.t.Helper()
	applied := false // not after a failure: the first one is reported
	defer func() {
		full := false
		if h.steps++; h.steps%h.guardEvery == 0 {
			h.guard()
			full = true
		}
		if !applied {
			return
		}
		if err := h.ev.compare(h.m, full); err != nil {
			h.t.Fatalf("at %v: events: %v", h.now, err)
		}
	}()
	h.ev.begin()
	for _, r := range out.Records {
		h.ev.record(r)
		h.written++
		if r.Value == nil {
			delete(h.records, string(r.Key))
		} else {
			h.records[string(r.Key)] = r.Value
		}
	}
	for _, r := range out.Replies {
		if _, dup := h.replies[r.To]; dup {
			h.t.Fatalf("request %d answered twice", r.To)
		}
		if r.To == 0 || r.To > h.nextID {
			h.t.Fatalf("reply to request %d, which was never sent", r.To)
		}
		h.replies[r.To] = r.Resp
		h.order = append(h.order, r.To)
	}
	for _, e := range out.Events {
		if err := h.ev.event(e, h.now); err != nil {
			h.t.Fatalf("at %v: event %d (%v of %q, member %q): %v", h.now, len(h.events), e.Kind, e.Group, e.Member, err)
		}
		h.events = append(h.events, e)
	}
	for _, tm := range out.Timers {
		if tm.At.IsZero() {
			delete(h.timers, tm.Key)
		} else {
			h.timers[tm.Key] = tm.At
		}
	}
	applied = true
}

// send hands req to the machine from client "client" on 127.0.0.1 and
// returns its id.
func (h *harness) send(req kmsg.Request) machine.RequestID {
	return h.sendFrom(req, "client")
}

func (h *harness) sendFrom(req kmsg.Request, clientID string) machine.RequestID {
	h.t.Helper()
	return h.sendAs(req, "", clientID)
}

// sendAs hands req to the machine for tenant from clientID.
func (h *harness) sendAs(req kmsg.Request, tenant, clientID string) machine.RequestID {
	h.t.Helper()
	h.nextID++
	id := h.nextID
	h.apply(h.m.Handle(h.now, machine.Request{ID: id, Msg: req, Tenant: tenant, ClientID: clientID, ClientHost: "/127.0.0.1", Topics: h.catalog, GroupConfig: h.groupConfig}))
	return id
}

// reply returns the answer to id, if there is one yet.
func (h *harness) reply(id machine.RequestID) (kmsg.Response, bool) {
	r, ok := h.replies[id]
	return r, ok
}

// do sends req and requires an answer at once.
func do[R kmsg.Response](h *harness, req kmsg.Request) R {
	h.t.Helper()
	id := h.send(req)
	r, ok := h.reply(id)
	if !ok {
		h.t.Fatalf("%s v%d was not answered at once", kmsg.NameForKey(req.Key()), req.GetVersion())
	}
	return r.(R)
}

// advance moves fake time forward by d, firing every timer that comes
// due in deadline order (ties by key), each at its own deadline.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	end := h.now.Add(d)
	testkit.FireDue(h.timers, &h.now, end, func(key string) { h.apply(h.m.Fire(h.now, key)) })
	h.now = end
}

// guard checks the one record rule (see harness).
func (h *harness) guard() {
	h.t.Helper()
	if err := h.m.Check(); err != nil {
		h.t.Fatalf("at %v: %v", h.now, err)
	}
	cfg := h.cfg
	if err := machine.CheckReplay(h.m, h.records, func() *groups.Shard { return groups.New(cfg) }); err != nil {
		h.t.Fatalf("at %v: %v", h.now, err)
	}
	h.checkReading()
}

// checkReading reads the shard's changes as the lag sampler does (a
// reading in full when the last is not the shard's, or when the count
// says a group went) and checks that the changes add up to a full
// reading. The marks this reading clears are what the next guard's
// Check holds every change to.
func (h *harness) checkReading() {
	h.t.Helper()
	d := groups.InspectChanges(h.m, false)
	apply := func(d groups.InspectDelta) {
		if d.Full {
			h.reading = map[groups.GroupRef]groups.Summary{}
		}
		for _, s := range d.Changed {
			h.reading[groups.GroupRef{Tenant: s.Tenant, Group: s.Group}] = s
		}
	}
	apply(d)
	if len(h.reading) != d.Count {
		apply(groups.InspectChanges(h.m, true))
	}
	full := groups.InspectAll(h.m)
	if len(full) != len(h.reading) {
		h.t.Fatalf("at %v: the readings of changes hold %d groups, a full reading %d", h.now, len(h.reading), len(full))
	}
	for _, s := range full {
		if got := h.reading[groups.GroupRef{Tenant: s.Tenant, Group: s.Group}]; !reflect.DeepEqual(got, s) {
			h.t.Fatalf("at %v: group %q from the readings of changes:\n%+v\nread in full:\n%+v", h.now, s.Group, got, s)
		}
	}
}

// restart replays the durable records into a fresh machine, as the
// runtime does when a shard loads: parked requests are forgotten.
func (h *harness) restart() {
	h.t.Helper()
	// A new process draws a new seed: ids handed out before the restart
	// must not come again.
	h.cfg.Seed[0]++
	h.m = groups.New(h.cfg)
	if err := machine.ReplaySorted(h.records, h.m.Replay); err != nil {
		h.t.Fatalf("%v", err)
	}
	h.timers = map[string]time.Time{}
	out := h.m.Loaded(h.now)
	if err := h.ev.loaded(h.m, out); err != nil {
		h.t.Fatalf("at %v: events: %v", h.now, err)
	}
	h.apply(out)
}
